import CByteScan

/// Turns validated head bytes into Strings.
enum FieldText {
    /// ASCII bytes (tokens, targets, names) that were already checked to be visible ASCII.
    static func ascii(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// A request method: the usual ones as their literals (no String made and validated for the
    /// method of every request), any other token as `ascii` makes it.
    static func method(_ bytes: UnsafeRawBufferPointer) -> String {
        func spells(_ literal: StaticString) -> Bool {
            bytes.count == literal.utf8CodeUnitCount
                && gatehouse_bytes_equal(bytes.baseAddress!, literal.utf8Start, bytes.count) != 0
        }
        switch bytes.count {
        case 3:
            if spells("GET") { return "GET" }
            if spells("PUT") { return "PUT" }
        case 4:
            if spells("POST") { return "POST" }
            if spells("HEAD") { return "HEAD" }
        case 5: if spells("PATCH") { return "PATCH" }
        case 6: if spells("DELETE") { return "DELETE" }
        case 7: if spells("OPTIONS") { return "OPTIONS" }
        default: break
        }
        return ascii(bytes)
    }

    /// A field value: UTF-8 when the bytes are valid UTF-8, otherwise each byte read as ISO-8859-1
    /// (RFC 9110 §5.5 obs-text), so any accepted value maps to a String without loss or crash.
    static func value(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        // ASCII (nearly every value) checked 16 bytes a step; `String(validating:)` is generic and slow.
        if let base = bytes.baseAddress, gatehouse_is_ascii(base, bytes.count) != 0 { return String(decoding: bytes, as: UTF8.self) }
        if bytes.isEmpty { return "" }
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var latin1 = String.UnicodeScalarView()
        for b in bytes { latin1.append(Unicode.Scalar(b)) }
        return String(latin1)
    }
}
