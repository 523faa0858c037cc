import CByteScan

/// The rules every head is written by (`HeadBuffer`, the encoders).
///
/// Only what our own parser would accept is written: a field whose name is not a token, or whose
/// value holds CR, LF, NUL or another control character, is dropped, so no header value coming from
/// an upstream or a handler can split the response (or the forwarded request).
enum HeadWriter {
    /// True when `field` can be written without changing the message structure.
    static func isSafe(_ field: HTTPField) -> Bool {
        // On the contiguous bytes where the strings have them (native strings do): a proof or an
        // assertion is hundreds of bytes, and the generic `UTF8View` walk costs about 30
        // instructions a byte.
        let name = field.name.utf8.withContiguousStorageIfAvailable(isToken)
            ?? (!field.name.isEmpty && field.name.utf8.allSatisfy(ASCII.isTokenChar))
        guard name else { return false }
        return field.value.utf8.withContiguousStorageIfAvailable(isFieldValue)
            ?? field.value.utf8.allSatisfy(ASCII.isFieldValueChar)
    }

    /// `Host: name\r\n`, `Host: name:port\r\n` or `Host: [v6]:port\r\n` (at most the name's length
    /// plus 31 bytes), or nothing when the name could not be written as a field value.
    static func writeHostField(hostName: String, port: Int?, into head: inout HeadBuffer) {
        // On the contiguous bytes: the generic `UTF8View` walks cost about 30 instructions a byte.
        let checked: (safe: Bool, bracketed: Bool) = hostName.utf8.withContiguousStorageIfAvailable { name in
            (!name.isEmpty && isFieldValue(name),
             ByteSearch.firstIndex(of: ASCII.colon, in: name, from: 0, to: name.count) < name.count)
        } ?? (!hostName.isEmpty && hostName.utf8.allSatisfy(ASCII.isFieldValueChar), hostName.utf8.contains(ASCII.colon))
        guard checked.safe else { return }
        head.text("Host: ")
        if checked.bracketed { head.byte(UInt8(ascii: "[")) }
        head.utf8(hostName)
        if checked.bracketed { head.byte(UInt8(ascii: "]")) }
        if let port {
            head.byte(ASCII.colon)
            head.decimal(port)
        }
        head.byte(ASCII.cr)
        head.byte(ASCII.lf)
    }

    /// Values such as a bearer token are a kilobyte long and written on every proxied request: the
    /// check runs 16 bytes a step (`CByteScan`).
    @inline(__always)
    static func isFieldValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        return gatehouse_is_field_value(base, bytes.count) != 0
    }

    /// A non-empty name of token characters only.
    @inline(__always)
    static func isToken(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
        return gatehouse_token_prefix(base, bytes.count) == bytes.count
    }
}
