import HTTP1

/// Reads cookies from request `Cookie` headers (RFC 6265 §5.4 `name=value; name2=value2`).
///
/// Tolerant of spacing and of junk pairs (skipped), never crashing on hostile input. Names are
/// compared exactly (cookie names are case-sensitive). A value in double quotes is returned
/// without them.
public enum CookieParser {
    /// The first cookie called `name` across every `Cookie` header, in order; nil when absent.
    public static func value(named name: String, in headers: HTTPHeaders) -> String? {
        var found: String? = nil
        forEachValue(named: name, in: headers) { value in
            found = String(value)
            return false
        }
        return found
    }

    /// True when some `Cookie` header carries a cookie called `name` (even with an empty value).
    /// Allocates nothing: the router asks this on every API request.
    public static func isPresent(named name: String, in headers: HTTPHeaders) -> Bool {
        var found = false
        forEachValueBytes(named: name, in: headers) { _ in
            found = true
            return false
        }
        return found
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
        headers.forEachValue("Cookie") { header in forEachValue(named: name, inHeader: header, body) }
    }

    /// Scans the bytes once: pairs are split at `;`, names and values trimmed of spaces and tabs,
    /// a quoted value unquoted. Returns false when `body` asked to stop.
    @discardableResult
    static func forEachValue(named name: String, inHeader header: String, _ body: (Substring) -> Bool) -> Bool {
        // Offsets found on the contiguous bytes (integer indexing, no String.Index arithmetic), then
        // the matching values are cut out of the header as Substrings: nothing is allocated.
        var header = header
        var from = 0
        while true {
            guard let match = header.withUTF8({ nextValue(named: name, in: $0, from: from) }) else { return true }
            let utf8 = header.utf8
            let lower = utf8.index(utf8.startIndex, offsetBy: match.start)
            let upper = utf8.index(lower, offsetBy: match.end - match.start)
            guard body(Substring(utf8[lower..<upper])) else { return false }
            from = match.next
        }
    }

    /// As `forEachValue(named:in:)`, each value as its bytes (valid only during the call): the
    /// session lookup on every proxied request needs no Substring of the header.
    public static func forEachValueBytes(named name: String, in headers: HTTPHeaders,
                                         _ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        headers.forEachValueBytes("Cookie") { bytes in
            var from = 0
            while let match = nextValue(named: name, in: bytes, from: from) {
                guard body(UnsafeBufferPointer(rebasing: bytes[match.start..<match.end])) else { return false }
                from = match.next
            }
            return true
        }
    }

    /// The first value of cookie `name` in `bytes` at or after `from`: its offsets (quotes
    /// removed) and where the next pair starts; nil when there is none.
    private static func nextValue(named name: String, in bytes: UnsafeBufferPointer<UInt8>,
                                  from: Int) -> (start: Int, end: Int, next: Int)? {
        var i = from
        let end = bytes.count
        while i < end {
            let pairEnd = ByteSearch.firstIndex(of: UInt8(ascii: ";"), in: bytes, from: i, to: end)
            let eq = ByteSearch.firstIndex(of: UInt8(ascii: "="), in: bytes, from: i, to: pairEnd)
            if eq < pairEnd {
                let (keyStart, keyEnd) = trimmed(bytes, i, eq)
                if keyEnd - keyStart == name.utf8.count,
                   sameBytes(name, UnsafeBufferPointer(rebasing: bytes[keyStart..<keyEnd])) {
                    var (valueStart, valueEnd) = trimmed(bytes, eq + 1, pairEnd)
                    if valueEnd - valueStart >= 2, bytes[valueStart] == UInt8(ascii: "\""),
                       bytes[valueEnd - 1] == UInt8(ascii: "\"") {
                        valueStart += 1
                        valueEnd -= 1
                    }
                    return (valueStart, valueEnd, pairEnd + 1)
                }
            }
            i = pairEnd + 1
        }
        return nil
    }

    /// On contiguous bytes: the generic `elementsEqual` cost about 500 instructions a cookie.
    private static func sameBytes(_ name: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        name.utf8.withContiguousStorageIfAvailable { ByteSearch.equal($0, bytes) } ?? name.utf8.elementsEqual(bytes)
    }

    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> (Int, Int) {
        var s = start, e = end
        while s < e, bytes[s] == 0x20 || bytes[s] == 0x09 { s += 1 }
        while e > s, bytes[e - 1] == 0x20 || bytes[e - 1] == 0x09 { e -= 1 }
        return (s, e)
    }

}
