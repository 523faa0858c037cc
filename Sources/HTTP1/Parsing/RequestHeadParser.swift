/// Parses the head of one HTTP/1.1 request from the start of a connection's read buffer.
///
/// Strict in the way RFC 9112 allows a server to be: every line ends in CRLF, no obs-fold, no
/// whitespace before a colon, exactly one Host for HTTP/1.1, origin-form targets only. Resumable: while
/// the head is incomplete it remembers how far it scanned, so the caller simply calls again with the
/// grown buffer.
///
/// For example:
/// ```swift
/// var parser = RequestHeadParser()
/// if case .complete(let head, let consumed) = try buffer.withUnsafeBytes({ try parser.parse($0) }) { … }
/// ```
///
/// Body framing (Content-Length / Transfer-Encoding) is checked separately by
/// ``BodyFramingRules/request(_:)``, which the caller runs on the complete head.
public struct RequestHeadParser: Sendable {
    /// RFC 9112 §2.2 asks to ignore "at least one" empty line before the request line; a few cover
    /// clients that end a body with an extra CRLF, more is noise.
    static let allowedLeadingEmptyLines = 4

    public let limits: HTTPParserLimits
    private var scanner: HeadBoundaryScanner
    /// The fields (and version) whose `Host` last passed `HostField.validate`: the scanner hands
    /// back the very same list when a client repeats its field lines, and the same list passes the
    /// same check (holding it keeps its storage from being another list's).
    private var hostValidated: (headers: HTTPHeaders, version: HTTPVersion)?

    public init(limits: HTTPParserLimits = .init()) {
        self.limits = limits
        scanner = HeadBoundaryScanner(limits: limits, allowedLeadingEmptyLines: Self.allowedLeadingEmptyLines,
                                      leadingEmptyLineError: .tooManyLeadingEmptyLines)
    }

    /// Bytes examined by the boundary scan since this parser was created (for linearity tests).
    var scannedByteCount: Int { scanner.scannedByteCount }

    /// Parses one request head at the start of `bytes`.
    ///
    /// `bytes` is the connection's read buffer: between calls that returned `.incomplete` it may only
    /// grow at its end (its start stays put). After `.complete` the parser is ready for the next
    /// request, whose head must then start at offset 0 of the buffer passed next.
    ///
    /// - Returns: `.incomplete` until the empty line that ends the head has arrived, then the head and
    ///   the number of bytes it took (leading empty lines included).
    /// - Throws: `HTTPParseError`; `headTooLarge` as soon as more than `maxHeadBytes` arrive without
    ///   the end of the head. After an error the connection must be closed (or `reset()` called).
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> HeadParseResult<HTTPRequestHead> {
        guard let (line, headers, consumed) = try scanner.parseHead(bytes, startLine: StartLineParser.requestLine) else {
            return .incomplete
        }
        let head = HTTPRequestHead(method: line.method, target: line.target, version: line.version, headers: headers)
        if let last = hostValidated, last.version == head.version, last.headers.isSameStorage(as: head.headers) {
            return .complete(head, consumed: consumed)
        }
        try HostField.validate(head)
        hostValidated = (head.headers, head.version)
        return .complete(head, consumed: consumed)
    }

    /// Drops what it kept of the previous head to recognise repeated field lines (an idle
    /// connection gives its memory back); the next head is parsed from scratch.
    public mutating func forgetPreviousHead() {
        scanner.forgetPreviousHead()
        hostValidated = nil
    }

    /// Forgets a partial head (e.g. after a timeout), ready to parse from offset 0 again.
    public mutating func reset() {
        scanner.reset()
    }
}
