/// Why a request or response could not be parsed. Each refusal has its own case so that logs and
/// tests can tell a smuggling attempt from a typo.
///
/// Context never includes field values (they may carry cookies or tokens): only offsets, line
/// numbers, limits and field names, which are validated tokens.
///
/// `status` gives the answer a server sends for a request it refuses; for a response from an
/// upstream the caller answers `502` whatever the case.
public enum HTTPParseError: Error, Equatable, Sendable {
    // MARK: Start line (RFC 9112 §3, §4)

    /// The request line is not `method SP request-target SP HTTP-version` (missing or extra SP).
    case invalidRequestLine
    /// The method is empty or holds a byte that is not a `tchar` (RFC 9110 §9.1, §5.6.2).
    case invalidMethod
    /// The request-target has a byte outside visible ASCII, or is not origin-form (`*` only for
    /// OPTIONS). Absolute-form and authority-form are refused: a gateway must not route by them.
    case invalidTarget
    /// The version is not `HTTP/` DIGIT `.` DIGIT (RFC 9112 §2.3).
    case invalidVersion
    /// A well-formed version other than HTTP/1.0 and HTTP/1.1 (505).
    case unsupportedVersion(major: Int, minor: Int)
    /// More empty lines before the request line than the few RFC 9112 §2.2 asks us to ignore.
    case tooManyLeadingEmptyLines
    /// The status line is not `HTTP-version SP 3DIGIT [SP reason-phrase]` (RFC 9112 §4).
    case invalidStatusLine

    // MARK: Line structure (RFC 9112 §2.2)

    /// A LF not preceded by CR, at this offset of the buffer.
    case bareLF(offset: Int)
    /// A CR not followed by LF, at this offset of the buffer.
    case bareCR(offset: Int)

    // MARK: Field lines (RFC 9112 §5, RFC 9110 §5). `line` counts the start line as line 1.

    /// A field line starts with SP or HTAB (obs-fold, RFC 9112 §5.2), or whitespace follows the start line.
    case obsoleteLineFolding(line: Int)
    /// Whitespace between the field name and the colon (RFC 9112 §5.1: MUST be rejected with 400).
    case whitespaceBeforeColon(line: Int)
    /// A field line without a colon.
    case missingColon(line: Int)
    /// The field name is empty or holds a byte that is not a `tchar`.
    case invalidFieldName(line: Int)
    /// The value of this field holds NUL, a control character or DEL (RFC 9110 §5.5).
    case invalidFieldValue(name: String)
    /// The head passed `limit` bytes without its final empty line (431).
    case headTooLarge(limit: Int)
    /// More than `limit` field lines (431).
    case tooManyHeaders(limit: Int)

    // MARK: Host (RFC 9112 §3.2)

    /// An HTTP/1.1 request without a Host field.
    case missingHost
    /// More than one Host field line.
    case multipleHost
    /// A Host value that is not `uri-host [ ":" port ]`.
    case invalidHost

    // MARK: Message body framing (RFC 9112 §6)

    /// Both Content-Length and Transfer-Encoding (RFC 9112 §6.1: a smuggling signal).
    case contentLengthWithTransferEncoding
    /// Several Content-Length values that differ (RFC 9112 §6.3 item 5).
    case conflictingContentLength
    /// A Content-Length that is not 1*DIGIT or is larger than 2^53.
    case invalidContentLength
    /// Transfer-Encoding in an HTTP/1.0 message (RFC 9112 §6.1: the framing is faulty).
    case transferEncodingInHTTP10
    /// A request's Transfer-Encoding whose final coding is not `chunked` (RFC 9112 §6.3 item 4).
    case chunkedNotFinal
    /// A Transfer-Encoding list that is empty, malformed, or applies `chunked` twice (RFC 9112 §7).
    case invalidTransferEncoding
    /// A transfer coding we do not implement, e.g. `gzip` in `gzip, chunked` (501, RFC 9112 §6.1).
    case unsupportedTransferEncoding(coding: String)

    // MARK: Chunked transfer coding (RFC 9112 §7.1)

    /// The chunk-size is missing, not hexadecimal, longer than 16 digits or above 2^53.
    case invalidChunkSize
    /// A chunk extension holds a control character or does not start with `;`.
    case invalidChunkExtension
    /// The chunk-size line (size and extensions) passed `limit` bytes.
    case chunkLineTooLong(limit: Int)
    /// A missing or bare CR/LF around chunk data or lines.
    case invalidChunkFraming
    /// A trailer field line is malformed (same rules as header fields).
    case invalidTrailer
    /// The trailer section passed `limit` bytes.
    case trailerTooLarge(limit: Int)

    /// The status a server answers when it refuses a request for this reason.
    public var status: Int {
        switch self {
        case .headTooLarge, .tooManyHeaders: 431
        case .unsupportedVersion: 505
        case .unsupportedTransferEncoding: 501
        default: 400
        }
    }
}
