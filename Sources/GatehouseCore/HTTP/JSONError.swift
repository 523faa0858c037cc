import HTTP1

/// The JSON error body of every Gatehouse error: `{"error":"…","error_description":"…"}`.
public enum JSONError {
    public static func body(error: String, description: String) -> [UInt8] {
        Array("{\"error\":\(JSONString.quoted(error)),\"error_description\":\(JSONString.quoted(description))}".utf8)
    }
}

extension HTTPResponse {
    /// A JSON error response (`Content-Type: application/json`, `Cache-Control: no-store`).
    ///
    /// For example: `.jsonError(status: 401, error: "csrf_header_missing", description: "…")`.
    public static func jsonError(status: Int, error: String, description: String) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/json")
        headers.add("Cache-Control", "no-store")
        return HTTPResponse(status: status, headers: headers, body: JSONError.body(error: error, description: description))
    }
}

/// JSON string literals (RFC 8259 §7), escaping quotes, backslashes and every control character,
/// plus U+2028/U+2029 so the output is also safe inside JavaScript.
public enum JSONString {
    public static func quoted(_ text: String) -> String {
        var out = "\""
        escape(text, into: &out)
        out += "\""
        return out
    }

    public static func escape(_ text: String, into out: inout String) {
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
    }
}
