import EventLoops
import HTTP1

/// Application entry point of the server.
///
/// Each request first gets `immediateResponse(to:)`, called synchronously on the connection's event
/// loop: answers that need no I/O (health probes, cached files) leave without creating a task. When
/// it returns nil, `handle(_:writer:)` runs in a task whose executor preference is that same event
/// loop, so the handler's code runs on the loop thread (no hop to the global pool) and awaits on
/// body reads, response writes and upstream sockets are resumed there.
public protocol HTTPHandler: Sendable {
    func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse?
    func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async
}

extension HTTPHandler {
    public func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse? { nil }
}
