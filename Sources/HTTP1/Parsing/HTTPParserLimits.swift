/// Bounds on what the parser accepts before it refuses a message.
///
/// Every limit is checked while bytes arrive, so a peer that never ends a line is refused as soon as
/// it passes the limit instead of making the server hold (and rescan) an ever-growing buffer.
///
/// For example: `RequestHeadParser(limits: HTTPParserLimits(maxHeadBytes: 8 * 1024))`.
public struct HTTPParserLimits: Sendable, Equatable {
    /// Largest head (start line, header fields and the empty line, plus any ignored empty lines before
    /// the start line), in bytes. Beyond it: `headTooLarge` (431). Default: 16 KiB.
    public var maxHeadBytes: Int
    /// Most header field lines in one head. Beyond it: `tooManyHeaders` (431). Default: 256.
    public var maxHeaderCount: Int
    /// Longest chunk-size line (size digits and extensions, without the CRLF). Default: 1 KiB.
    public var maxChunkLineBytes: Int
    /// Largest trailer section after the last chunk, CRLFs included. Default: 16 KiB.
    public var maxTrailerBytes: Int

    public init(maxHeadBytes: Int = 16 * 1024, maxHeaderCount: Int = 256,
                maxChunkLineBytes: Int = 1024, maxTrailerBytes: Int = 16 * 1024) {
        self.maxHeadBytes = maxHeadBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxChunkLineBytes = maxChunkLineBytes
        self.maxTrailerBytes = maxTrailerBytes
    }
}
