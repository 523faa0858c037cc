import EventLoops
import HTTP1

/// Application entry point of the server.
///
/// Each request first gets `immediateResponse(to:)`, called synchronously on the connection's event
/// loop: answers that need no I/O (health probes, cached files) leave without creating a task. When
/// it returns nil, `handle(_:writer:)` runs in a task whose executor preference is that same event
/// loop, so the handler's code runs on the loop thread (no hop to the global pool) and awaits on
/// body reads, response writes and upstream sockets are resumed there.
///
/// In between, `handleOnLoop(_:writer:completion:)` may take the request without a task, to answer
/// it from readiness callbacks on the loop (the API proxy's usual exchange: a head sent upstream,
/// the answer relayed when its socket turns readable).
public protocol HTTPHandler: Sendable {
    func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse?
    /// Called on the connection's loop for a request `immediateResponse` did not answer. true: the
    /// handler took it, answers through `writer` and calls `completion.handlerReturned()` when
    /// done (or hands the rest to `completion.continueInTask`). false: `handle` gets the request
    /// as if this had not been called, so a handler returns false only while nothing it did needs
    /// undoing (nothing answered, nothing sent on the request's behalf).
    func handleOnLoop(_ request: HTTPRequest, writer: any HTTPResponseWriter, completion: HandlerCompletion) -> Bool
    func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async
    /// The handler the connections of `loop` call, asked once per loop when the server starts.
    /// A handler shared by the loops has its reference count moved between their cores on every
    /// call (each request copies the handler it calls); one of the loop's own keeps that count, and
    /// whatever else the handler copies per request, on the loop's core. Default: `self`.
    func loopHandler(for loop: EventLoop) -> any HTTPHandler
}

extension HTTPHandler {
    public func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse? { nil }
    public func handleOnLoop(_ request: HTTPRequest, writer: any HTTPResponseWriter, completion: HandlerCompletion) -> Bool {
        false
    }
    public func loopHandler(for loop: EventLoop) -> any HTTPHandler { self }
}
