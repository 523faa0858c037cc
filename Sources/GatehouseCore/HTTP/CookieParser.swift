import HTTPServer

/// Reads cookies from request `Cookie` headers (RFC 6265 §5.4 `name=value; name2=value2`).
///
/// Tolerant of spacing and of junk pairs (skipped), never crashing on hostile input. Names are
/// compared exactly (cookie names are case-sensitive). A value in double quotes is returned
/// without them.
public enum CookieParser {
    /// The first cookie called `name` across every `Cookie` header, in order; nil when absent.
    public static func value(named name: String, in headers: HTTPHeaders) -> String? {
        for header in headers.values("Cookie") {
            if let v = values(named: name, inHeader: header).first { return v }
        }
        return nil
    }

    /// Every cookie called `name`, in order. A sibling subdomain can plant a same-named cookie
    /// (without `__Host-`), so callers that look a value up server-side may try each.
    public static func values(named name: String, in headers: HTTPHeaders) -> [String] {
        var found: [String] = []
        forEachValue(named: name, in: headers) { found.append(String($0)); return true }
        return found
    }

    static func values(named name: String, inHeader header: String) -> [String] {
        var found: [String] = []
        forEachValue(named: name, inHeader: header) { found.append(String($0)); return true }
        return found
    }

    /// Calls `body` with every cookie called `name` across the `Cookie` headers, in order, until it
    /// returns false. Allocates nothing (this runs on every API request).
    public static func forEachValue(named name: String, in headers: HTTPHeaders, _ body: (Substring) -> Bool) {
        for field in headers where field.name.asciiCaseInsensitiveEquals("Cookie") {
            guard forEachValue(named: name, inHeader: field.value, body) else { return }
        }
    }

    /// Scans the bytes once: pairs are split at `;`, names and values trimmed of spaces and tabs,
    /// a quoted value unquoted. Returns false when `body` asked to stop.
    @discardableResult
    static func forEachValue(named name: String, inHeader header: String, _ body: (Substring) -> Bool) -> Bool {
        let bytes = header.utf8
        let target = name.utf8
        var i = bytes.startIndex
        let end = bytes.endIndex
        while i < end {
            var pairEnd = i
            while pairEnd < end && bytes[pairEnd] != UInt8(ascii: ";") { pairEnd = bytes.index(after: pairEnd) }
            if let eq = bytes[i..<pairEnd].firstIndex(of: UInt8(ascii: "=")) {
                let key = trimmed(bytes[i..<eq])
                if key.elementsEqual(target) {
                    var value = trimmed(bytes[bytes.index(after: eq)..<pairEnd])
                    if value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\"") {
                        value = value.dropFirst().dropLast()
                    }
                    guard body(Substring(value)) else { return false }
                }
            }
            i = pairEnd < end ? bytes.index(after: pairEnd) : end
        }
        return true
    }

    private static func trimmed(_ slice: Substring.UTF8View.SubSequence) -> Substring.UTF8View.SubSequence {
        var s = slice
        while let first = s.first, first == 0x20 || first == 0x09 { s = s.dropFirst() }
        while let last = s.last, last == 0x20 || last == 0x09 { s = s.dropLast() }
        return s
    }
}
