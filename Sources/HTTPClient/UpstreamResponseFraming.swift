import HTTP1

/// How an upstream's answer is delimited and what length the browser is told, decided the same way
/// for both upstream clients before anything is relayed (RFC 9112 §6.3; what nginx's
/// `ngx_http_proxy_process_header` and HAProxy refuse).
///
/// An answer whose framing is ambiguous is refused with `.invalidResponse` (the proxy says `502`
/// and closes the upstream connection) instead of being relayed half-parsed:
/// - `Content-Length` together with `Transfer-Encoding`, whatever the status or method;
/// - `Content-Length` values that are not all the same `1*DIGIT` (several fields, a list with
///   differing members, a sign, spaces inside, anything but digits), even on a bodiless answer;
/// - a transfer coding other than `chunked` alone, or `Transfer-Encoding` in an HTTP/1.0 answer;
/// - `101 Switching Protocols`: neither client asks for, nor can relay, a protocol switch.
///
/// For example: `let decided = try UpstreamResponseFraming(head, requestMethod: "GET", version: .http1_1)`.
public struct UpstreamResponseFraming: Sendable, Equatable {
    /// How the upstream delimits the body.
    public let framing: BodyFraming
    /// The `Content-Length` to announce to the browser: the body's length, or for `HEAD` the length a
    /// `GET` would have sent; nil for a chunked or close-delimited body and for `204`/`304`.
    public let announcedLength: Int?

    /// The most body bytes that may reach the browser: 0 for a bodiless answer, the length for a
    /// length-delimited one, nil (no bound) otherwise. A relay that would exceed it cuts the browser's
    /// connection instead: extra bytes would be read as the next answer on its keep-alive connection.
    public var bodyLimit: Int? {
        switch framing {
        case .none: 0
        case .contentLength(let n): n
        case .chunked, .untilClose: nil
        }
    }

    /// True when the connection may carry another exchange once this body has been read to its
    /// end: never after a close-delimited body or an answer to `CONNECT` (a `2xx` makes it a tunnel).
    public let leavesConnectionReusable: Bool

    public init(_ head: HTTPResponseHead, requestMethod: String, version: HTTPVersion) throws(UpstreamError) {
        if head.status == 101 {
            throw .invalidResponse("101 Switching Protocols, but no protocol switch was asked for")
        }
        var lengths = 0, codings = 0
        var lastLength: Int? = nil
        // Read as bytes: every upstream answer passes here.
        head.headers.forEachField { index, name, _ in
            if name.count == 14, ByteSearch.equalIgnoringASCIICase(name, "Content-Length") {
                lengths += 1
                lastLength = index
            } else if name.count == 17, ByteSearch.equalIgnoringASCIICase(name, "Transfer-Encoding") {
                codings += 1
            }
            return true
        }
        if lengths > 0 && codings > 0 { throw .invalidResponse("both Content-Length and Transfer-Encoding") }
        var length: Int? = nil
        if lengths == 1, let lastLength {
            let parsed = head.headers.withField(at: lastLength) { _, value in
                Result { () throws(UpstreamError) -> Int in try Self.parseLength(bytes: value) }
            }
            length = try parsed.get()
        } else if lengths > 1 {
            for value in head.headers.values("Content-Length") {
                let n = try Self.parseLength(value)
                if let length, length != n { throw .invalidResponse("conflicting Content-Length values") }
                length = n
            }
        }
        let isCONNECT = requestMethod.utf8.count == 7 && requestMethod.asciiCaseInsensitiveEquals("CONNECT")
        if requestMethod == "HEAD" {
            // RFC 9112 §6.3 item 1: no body, but the length a GET would have sent is announced.
            framing = .none
            announcedLength = length
        } else if (100...199).contains(head.status) || head.status == 204 || head.status == 304
                    || (isCONNECT && (200...299).contains(head.status)) {
            // Items 1 and 2: these end with their head, whatever they declare.
            framing = .none
            announcedLength = nil
        } else if codings > 0 {
            do {
                framing = try BodyFramingRules.response(head, requestMethod: requestMethod, version: version)
            } catch {
                throw .invalidResponse("Transfer-Encoding: \(error)")
            }
            announcedLength = nil
        } else if let length {
            framing = .contentLength(length)
            announcedLength = length
        } else {
            framing = .untilClose
            announcedLength = nil
        }
        leavesConnectionReusable = !isCONNECT && framing != .untilClose
    }

    /// One `Content-Length` field: `1*DIGIT`, or a list whose members are all the same `1*DIGIT`
    /// (RFC 9110 §8.6 lets a recipient accept `42, 42`); at most 2^53.
    static func parseLength(_ value: String) throws(UpstreamError) -> Int {
        var value = value
        let parsed = value.withUTF8 { bytes in Result { () throws(UpstreamError) -> Int in try parseLength(bytes: bytes) } }
        return try parsed.get()
    }

    static func parseLength(bytes value: UnsafeBufferPointer<UInt8>) throws(UpstreamError) -> Int {
        var agreed: Int? = nil
        var current = 0, digits = 0, sawSpaceAfterDigits = false
        func finishMember() throws(UpstreamError) {
            guard digits > 0 else { throw .invalidResponse("malformed Content-Length") }
            if let agreed, agreed != current { throw .invalidResponse("conflicting Content-Length values") }
            agreed = current
            current = 0
            digits = 0
            sawSpaceAfterDigits = false
        }
        for byte in value {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard !sawSpaceAfterDigits else { throw .invalidResponse("malformed Content-Length") }
                current = current * 10 + Int(byte &- UInt8(ascii: "0"))
                digits += 1
                guard current <= 1 << 53 else { throw .invalidResponse("Content-Length too large") }
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                if digits > 0 { sawSpaceAfterDigits = true }
            case UInt8(ascii: ","):
                try finishMember()
            default:
                throw .invalidResponse("malformed Content-Length")
            }
        }
        try finishMember()
        return agreed ?? 0
    }
}
