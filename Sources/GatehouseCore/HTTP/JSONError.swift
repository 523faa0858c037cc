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
            let value = scalar.value
            if value >= 0x20, value < 0x7F, value != 0x22, value != 0x5C {  // printable ASCII but `"` and `\`
                out.unicodeScalars.append(scalar)
            } else if let short = shortEscape(scalar) {
                out += short
            } else if value < 0x20 || value == 0x7F || value == 0x2028 || value == 0x2029 {
                // Other controls, DEL, and the two separators JavaScript reads as line ends: `\uXXXX`.
                let hex = String(value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }

    /// The two-character escapes RFC 8259 §7 names.
    private static func shortEscape(_ scalar: Unicode.Scalar) -> String? {
        switch scalar {
        case "\"": return "\\\""
        case "\\": return "\\\\"
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        case "\u{08}": return "\\b"
        case "\u{0C}": return "\\f"
        default: return nil
        }
    }
}
