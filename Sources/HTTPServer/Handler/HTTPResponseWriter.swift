import EventLoops
import HTTP1

/// Where a handler writes its answer. Either one `respond(_:)`, or `writeHead` + `writeBody`* +
/// `finish()` for a streamed body. `writeBody` waits while the client is slower than the producer
/// (back-pressure), so a relay never buffers a whole download.
public protocol HTTPResponseWriter: AnyObject, Sendable {
    /// Sends a complete response in one write.
    func respond(_ response: HTTPResponse) async
    /// Does what `respond(_:)` does when it can without suspending (the caller runs on the
    /// connection's loop) and returns true; false when the caller must `await respond(_:)`. Each
    /// await that could suspend costs a task switch when it returns (a status-lock lookup of the
    /// task's executor preference), so the proxy answers through this first.
    func respondImmediately(_ response: HTTPResponse) -> Bool
    /// Starts a streamed response. `contentLength` nil means chunked (HTTP/1.1) or close-delimited (1.0).
    func writeHead(_ head: HTTPResponseHead, contentLength: Int?) async throws(HTTPWriteError)
    /// Sends one piece of the body now (each call is a flush point: SSE events leave as they come).
    func writeBody(_ bytes: [UInt8]) async throws(HTTPWriteError)
    /// Ends the streamed body (the last chunk for chunked encoding).
    func finish() async throws(HTTPWriteError)
    /// Ends the exchange abruptly: the connection is closed without completing the body (used when an
    /// upstream breaks mid-stream, so the client sees a truncated body rather than a wrong one).
    func abort()
    /// True once a head has been sent.
    var headWritten: Bool { get }
    /// Answers `101 Switching Protocols` with `head` and hands the connection's socket over as a
    /// tunnel endpoint (attach it to a `ByteTunnel` on the same loop). The exchange is over
    /// afterwards. Throws when it cannot switch (an answer started, an unread request body, the
    /// server shutting down, the client gone, or a writer that does not support it).
    func switchProtocols(_ head: HTTPResponseHead) async throws(HTTPWriteError) -> any TunnelEndpoint
}

extension HTTPResponseWriter {
    public func respondImmediately(_ response: HTTPResponse) -> Bool { false }

    public func switchProtocols(_ head: HTTPResponseHead) async throws(HTTPWriteError) -> any TunnelEndpoint {
        throw .invalidState("this writer cannot switch protocols")
    }
}
