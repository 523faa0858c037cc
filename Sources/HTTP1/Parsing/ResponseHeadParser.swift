/// Parses the head of one HTTP/1.x response (from an upstream) at the start of a read buffer.
///
/// Same line rules and limits as ``RequestHeadParser``; no empty lines are skipped before the status
/// line. Interim `1xx` heads are returned like any other: the caller decides to skip them and parse
/// again after `consumed`.
///
/// For example: `if case .complete(let head, let n) = try parser.parse(bytes) { framing = try BodyFramingRules.response(head, requestMethod: "GET", version: parser.lastVersion) }`.
public struct ResponseHeadParser: Sendable {
    public let limits: HTTPParserLimits
    private var scanner: HeadBoundaryScanner
    /// The version of the last complete status line (HTTP/1.0 responses are not persistent by default).
    public private(set) var lastVersion: HTTPVersion = .http1_1

    public init(limits: HTTPParserLimits = .init()) {
        self.limits = limits
        scanner = HeadBoundaryScanner(limits: limits, allowedLeadingEmptyLines: 0,
                                      leadingEmptyLineError: .invalidStatusLine)
    }

    var scannedByteCount: Int { scanner.scannedByteCount }

    /// Parses one response head at the start of `bytes`; see ``RequestHeadParser/parse(_:)`` for the
    /// buffer contract.
    /// `remembering`: whether the previous head's field lines may answer for this head's
    /// (`SpeedLayer`); false parses it as a connection's first.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer,
                               remembering: Bool = true) throws(HTTPParseError) -> HeadParseResult<HTTPResponseHead> {
        if !remembering { scanner.forgetPreviousHead() }
        guard let ((version, status), headers, consumed) = try scanner.parseHead(bytes, startLine: StartLineParser.statusLine) else {
            return .incomplete
        }
        lastVersion = version
        return .complete(HTTPResponseHead(status: status, headers: headers), consumed: consumed)
    }

    /// Forgets a partial head, ready to parse from offset 0 again.
    public mutating func reset() {
        scanner.reset()
    }
}
