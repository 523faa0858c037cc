/// How the body of a message is delimited (RFC 9112 §6.3).
public enum BodyFraming: Equatable, Sendable {
    /// No body at all.
    case none
    /// Exactly this many bytes follow the head (0 is kept as declared).
    case contentLength(Int)
    /// Chunked transfer coding: decode with ``ChunkedDecoder``.
    case chunked
    /// A response body that ends when the upstream closes the connection.
    case untilClose
}

/// Decides body framing from a head, refusing every ambiguous combination (request smuggling).
///
/// For example: `let framing = try BodyFramingRules.request(head)`.
public enum BodyFramingRules {
    /// The framing of a request body (RFC 9112 §6.3 items 3–7).
    ///
    /// - Throws: `contentLengthWithTransferEncoding`, `transferEncodingInHTTP10`, `chunkedNotFinal`,
    ///   `invalidTransferEncoding`, `unsupportedTransferEncoding` (501), `invalidContentLength`,
    ///   `conflictingContentLength`.
    public static func request(_ head: HTTPRequestHead) throws(HTTPParseError) -> BodyFraming {
        try declared(head.headers, version: head.version, absent: .none, finalNotChunked: .chunkedNotFinal)
    }

    /// The framing of a response to a request with `requestMethod` (RFC 9112 §6.3 items 1–8).
    ///
    /// - Parameters:
    ///   - version: the status line's version (``ResponseHeadParser/lastVersion``); an HTTP/1.0
    ///     response with Transfer-Encoding is refused.
    /// - Throws: as ``request(_:)``; a response whose codings are anything but `chunked` is refused
    ///   with `unsupportedTransferEncoding` (a gateway cannot relay a body it cannot delimit).
    public static func response(_ head: HTTPResponseHead, requestMethod: String,
                                version: HTTPVersion = .http1_1) throws(HTTPParseError) -> BodyFraming {
        // Item 1: HEAD responses, 1xx, 204 and 304 end with the head, whatever they declare.
        if requestMethod == "HEAD" || (100...199).contains(head.status) || head.status == 204 || head.status == 304 {
            return .none
        }
        // Item 2: a 2xx to CONNECT turns the connection into a tunnel; no body follows the head.
        if requestMethod == "CONNECT", (200...299).contains(head.status) { return .none }
        return try declared(head.headers, version: version, absent: .untilClose, finalNotChunked: nil)
    }

    /// The framing `headers` declare with Content-Length and Transfer-Encoding (RFC 9112 §6.1–6.3),
    /// `absent` when they declare none.
    private static func declared(_ headers: HTTPHeaders, version: HTTPVersion, absent: BodyFraming,
                                 finalNotChunked: HTTPParseError?) throws(HTTPParseError) -> BodyFraming {
        let fields = FramingFields(headers)
        if fields.codings == 0 {
            if fields.lengths == 0 { return absent }
            if fields.lengths == 1, let index = fields.lastLength { return .contentLength(try ContentLength.parse(headers.value(at: index))) }
        }
        let transferEncoding = headers.values("Transfer-Encoding")
        let contentLength = headers.values("Content-Length")
        if !transferEncoding.isEmpty {
            // RFC 9112 §6.1: a message with both "ought to be handled as an error" (§6.3 item 3 lets
            // Transfer-Encoding win for a response but calls the pair a smuggling signal); for a gateway
            // that forwards messages it is the classic smuggling vector, so refuse it outright.
            if !contentLength.isEmpty { throw .contentLengthWithTransferEncoding }
            // RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 means the framing is faulty.
            if version == .http1_0 { throw .transferEncodingInHTTP10 }
            try TransferCodings.requireChunkedOnly(transferEncoding, finalNotChunked: finalNotChunked)
            return .chunked
        }
        if !contentLength.isEmpty { return .contentLength(try ContentLength.parse(contentLength)) }
        return absent
    }
}

/// The framing fields of a head, counted in one pass: most messages have one `Content-Length` or
/// none and no `Transfer-Encoding`, and are decided without collecting values into arrays.
struct FramingFields {
    var lengths = 0
    var codings = 0
    /// The index of the last `Content-Length` field.
    var lastLength: Int?

    init(_ headers: HTTPHeaders) {
        // Read as bytes, lengths first: every request and answer passes here.
        headers.forEachField { index, name, _ in
            switch name.count {
            case 14 where ByteSearch.equalIgnoringASCIICase(name, "Content-Length"):
                lengths += 1
                lastLength = index
            case 17 where ByteSearch.equalIgnoringASCIICase(name, "Transfer-Encoding"):
                codings += 1
            default:
                break
            }
            return true
        }
    }
}

/// Transfer-Encoding lists (RFC 9112 §6.1, §7).
enum TransferCodings {
    /// Accepts exactly `chunked` (any case, across one or several fields, empty list elements ignored).
    ///
    /// - Parameter finalNotChunked: the error for a list whose last coding is not chunked; nil to report
    ///   it as `unsupportedTransferEncoding` of that coding (responses).
    static func requireChunkedOnly(_ values: [String],
                                   finalNotChunked: HTTPParseError?) throws(HTTPParseError) {
        var codings: [Substring] = []
        for value in values {
            for element in value.split(separator: ",", omittingEmptySubsequences: false) {
                let coding = element.trimmingASCIIWhitespace()
                if coding.isEmpty { continue }  // RFC 9110 §5.6.1: ignore empty list elements
                codings.append(coding)
            }
        }
        guard let last = codings.popLast() else { throw .invalidTransferEncoding }
        let lastName = try codingName(last)
        // RFC 9112 §6.3 item 4: chunked must be the final coding, or the length cannot be known.
        guard lastName.asciiCaseInsensitiveEquals("chunked") else {
            if let finalNotChunked { throw finalNotChunked }
            throw .unsupportedTransferEncoding(coding: lastName.lowercased())
        }
        // chunked defines no parameters.
        guard lastName.utf8.count == last.utf8.count else { throw .invalidTransferEncoding }
        for coding in codings {
            let name = try codingName(coding)
            // RFC 9112 §7: "A sender MUST NOT apply the chunked transfer coding more than once".
            if name.asciiCaseInsensitiveEquals("chunked") { throw .invalidTransferEncoding }
            // RFC 9112 §6.1: a coding we do not understand is answered with 501.
            throw .unsupportedTransferEncoding(coding: name.lowercased())
        }
    }

    /// The token before any `;` parameters.
    private static func codingName(_ coding: Substring) throws(HTTPParseError) -> Substring {
        let name = coding.prefix { $0 != ";" }.trimmingASCIIWhitespace()
        guard !name.isEmpty, name.utf8.allSatisfy(ASCII.isTokenChar) else { throw .invalidTransferEncoding }
        return name
    }
}

/// Content-Length values (RFC 9110 §8.6, RFC 9112 §6.3 item 5).
enum ContentLength {
    /// The one length that every Content-Length field and list element agrees on.
    static func parse(_ values: [String]) throws(HTTPParseError) -> Int {
        var agreed: Int?
        for value in values {
            let length = try parse(value)
            if let agreed, agreed != length { throw .conflictingContentLength }
            agreed = length
        }
        guard let agreed else { throw .invalidContentLength }
        return agreed
    }

    /// One field's value: a list whose elements must all be the same length (`42, 42` is 42).
    static func parse(_ value: String) throws(HTTPParseError) -> Int {
        var agreed: Int?
        var rest = value[...]
        while true {
            let comma = rest.utf8.firstIndex(of: UInt8(ascii: ",")) ?? rest.endIndex
            let length = try parseDigits(rest[..<comma].trimmingASCIIWhitespace())
            if let agreed, agreed != length { throw .conflictingContentLength }
            agreed = length
            guard comma < rest.endIndex else { return length }
            rest = rest[rest.utf8.index(after: comma)...]
        }
    }

    /// `1*DIGIT`, no sign, no whitespace inside, at most 2^53.
    static func parseDigits(_ text: Substring) throws(HTTPParseError) -> Int {
        guard !text.isEmpty else { throw .invalidContentLength }
        var length = 0
        for b in text.utf8 {
            guard ASCII.isDigit(b) else { throw .invalidContentLength }
            length = length * 10 + Int(b - 0x30)
            if length > maxFramingLength { throw .invalidContentLength }
        }
        return length
    }
}
