/// The request line (RFC 9112 §3) and the status line (RFC 9112 §4).
enum StartLineParser {
    struct RequestLine {
        var method: String
        var target: String
        var version: HTTPVersion
    }

    /// `HTTP-version = HTTP-name "/" DIGIT "." DIGIT` with the case-sensitive name `HTTP` (§2.3).
    static func version(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> HTTPVersion? {
        guard end - start == 8,
              bytes[start] == 0x48, bytes[start + 1] == 0x54, bytes[start + 2] == 0x54,
              bytes[start + 3] == 0x50, bytes[start + 4] == ASCII.slash,
              ASCII.isDigit(bytes[start + 5]), bytes[start + 6] == ASCII.dot, ASCII.isDigit(bytes[start + 7])
        else { return nil }
        return HTTPVersion(major: Int(bytes[start + 5] - 0x30), minor: Int(bytes[start + 7] - 0x30))
    }

    static func isSupported(_ version: HTTPVersion) -> Bool {
        version == .http1_1 || version == .http1_0
    }

    /// `method SP request-target SP HTTP-version` in `[start, end)`, exactly one SP between parts.
    static func requestLine(_ bytes: UnsafeRawBufferPointer, from start: Int,
                            to end: Int) throws(HTTPParseError) -> RequestLine {
        // method = token, ended by the first SP.
        var i = start
        while i < end, ASCII.isTokenChar(bytes[i]) { i += 1 }
        if i == end { throw i == start ? HTTPParseError.invalidMethod : HTTPParseError.invalidRequestLine }
        guard i > start, bytes[i] == ASCII.space else { throw .invalidMethod }
        let methodEnd = i

        // The version follows the last SP; everything between is the target, which may hold no SP.
        var lastSpace = end - 1
        while lastSpace > methodEnd, bytes[lastSpace] != ASCII.space { lastSpace -= 1 }
        let targetStart = methodEnd + 1
        guard lastSpace > methodEnd, targetStart < lastSpace, bytes[targetStart] != ASCII.space,
              bytes[lastSpace - 1] != ASCII.space else {
            throw .invalidRequestLine
        }

        guard let version = version(bytes, from: lastSpace + 1, to: end) else { throw .invalidVersion }
        guard isSupported(version) else {
            throw .unsupportedVersion(major: version.major, minor: version.minor)
        }

        // Visible ASCII only; in the path (before `?`) none of the bytes RFC 3986 §3.3 leaves out
        // of a path, and no `#` anywhere (a fragment is never sent). An upstream that parses the
        // path as a URI reference would otherwise read `/api/x/..#` as climbing out of a route's
        // prefix. Browsers percent-encode all of these but `^` and `|` (WHATWG URL).
        var inPath = true
        for j in targetStart..<lastSpace {
            let b = bytes[j]
            guard ASCII.isVisible(b) else { throw .invalidTarget }
            if b == UInt8(ascii: "?") { inPath = false }
            else if b == UInt8(ascii: "#") || (inPath && ASCII.isExcludedFromPath(b)) { throw .invalidTarget }
        }
        let method = FieldText.method(UnsafeRawBufferPointer(rebasing: bytes[start..<methodEnd]))
        let isAsterisk = lastSpace - targetStart == 1 && bytes[targetStart] == ASCII.star
        // RFC 9112 §3.2: origin-form for everything we serve; asterisk-form only for OPTIONS.
        // Absolute-form and authority-form are refused so nothing can route by a target's authority.
        if isAsterisk {
            guard method == "OPTIONS" else { throw .invalidTarget }
        } else if bytes[targetStart] != ASCII.slash {
            throw .invalidTarget
        }
        let target = FieldText.ascii(UnsafeRawBufferPointer(rebasing: bytes[targetStart..<lastSpace]))
        return RequestLine(method: method, target: target, version: version)
    }

    /// `HTTP-version SP status-code SP [ reason-phrase ]`; a missing `SP reason` is accepted too.
    static func statusLine(_ bytes: UnsafeRawBufferPointer, from start: Int,
                           to end: Int) throws(HTTPParseError) -> (HTTPVersion, Int) {
        guard end - start >= 12, bytes[start + 8] == ASCII.space else { throw .invalidStatusLine }
        guard let version = version(bytes, from: start, to: start + 8) else { throw .invalidStatusLine }
        guard isSupported(version) else {
            throw .unsupportedVersion(major: version.major, minor: version.minor)
        }
        var status = 0
        for i in (start + 9)..<(start + 12) {
            guard ASCII.isDigit(bytes[i]) else { throw .invalidStatusLine }
            status = status * 10 + Int(bytes[i] - 0x30)
        }
        // RFC 9110 §15: status codes are 100...599.
        guard (100...599).contains(status) else { throw .invalidStatusLine }
        if end > start + 12 {
            guard bytes[start + 12] == ASCII.space else { throw .invalidStatusLine }
            for i in (start + 13)..<end where !ASCII.isFieldValueChar(bytes[i]) { throw .invalidStatusLine }
        }
        return (version, status)
    }
}
