import HTTP1

/// What `StaticFiles.respond(to:)` decided for one GET or HEAD request.
///
/// Small files come from memory and are answered in one write; large files are streamed from disk by
/// `StaticFileStreamer` so that a download never sits whole in memory.
public enum StaticAnswer: Sendable, Equatable {
    /// A complete answer: cached files, `304`, `404`, `405`, `416` and errors. For HEAD the body is
    /// empty and `Content-Length` carries the length a GET would have had.
    case response(HTTPResponse)
    /// A large file to stream: `head` is complete except for `Content-Length`, which
    /// `StaticFileStreamer` passes to `writeHead(_:contentLength:)` as `range.count`.
    case file(head: HTTPResponseHead, path: String, range: Range<Int>)
}
