import CByteScan

/// Turns validated head bytes into Strings.
enum FieldText {
    /// ASCII bytes (tokens, targets, names) that were already checked to be visible ASCII.
    static func ascii(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// A field value: UTF-8 when the bytes are valid UTF-8, otherwise each byte read as ISO-8859-1
    /// (RFC 9110 §5.5 obs-text), so any accepted value maps to a String without loss or crash.
    static func value(_ bytes: UnsafeRawBufferPointer) -> String {
        if bytes.isEmpty || gatehouse_is_ascii(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count) != 0 {
            return String(decoding: bytes, as: UTF8.self)
        }
        if let utf8 = String(validating: bytes, as: UTF8.self) { return utf8 }
        var latin1 = String.UnicodeScalarView()
        for b in bytes { latin1.append(Unicode.Scalar(b)) }
        return String(latin1)
    }
}
