/// RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1
/// request message that lacks a Host header field and to any request message that contains more than
/// one Host header field line or a Host header field with an invalid field value."
enum HostField {
    static func validate(_ head: HTTPRequestHead) throws(HTTPParseError) {
        var fields = 0
        var valid = false
        head.headers.forEachValueBytes("host") { value in
            fields += 1
            valid = isValid(bytes: value)
            return fields == 1
        }
        if fields > 1 { throw .multipleHost }
        guard fields == 1 else {
            if head.version == .http1_0 { return }
            throw .missingHost
        }
        guard valid else { throw .invalidHost }
    }

    /// `uri-host [ ":" port ]` (RFC 3986 §3.2.2): a bracketed IP literal or a reg-name/IPv4 address.
    /// An empty host is refused too: every client we serve names the host.
    private static func isValid(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !bytes.isEmpty else { return false }
        var i = 0
        if bytes[0] == 0x5B {  // "["
            i = 1
            while i < bytes.count, bytes[i] != 0x5D {
                guard isUnreserved(bytes[i]) || isSubDelim(bytes[i]) || bytes[i] == ASCII.colon else { return false }
                i += 1
            }
            guard i < bytes.count, i > 1 else { return false }
            i += 1  // past "]"
        } else {
            while i < bytes.count, bytes[i] != ASCII.colon {
                let b = bytes[i]
                if b == 0x25 {  // pct-encoded
                    guard i + 2 < bytes.count, ASCII.hexValue(bytes[i + 1]) != nil,
                          ASCII.hexValue(bytes[i + 2]) != nil else { return false }
                    i += 3
                    continue
                }
                guard isUnreserved(b) || isSubDelim(b) else { return false }
                i += 1
            }
            guard i > 0 else { return false }
        }
        guard i < bytes.count else { return true }
        guard bytes[i] == ASCII.colon else { return false }
        return bytes[(i + 1)...].allSatisfy(ASCII.isDigit)
    }

    private static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: true
        default: false
        }
    }

    private static func isSubDelim(_ b: UInt8) -> Bool {
        switch b {
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: true
        default: false
        }
    }
}
