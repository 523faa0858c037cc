import EventLoops
import HTTP1

/// Application entry point of the server: one question per request, asked once, synchronously on the
/// connection's event loop (`answer`), whose reply says how the request is answered:
///
/// - `.now`: a complete answer that needs no I/O (health probes, cached files, refusals): it leaves
///   without a request object or a task.
/// - `.onLoop`: the handler took the request on the loop (`RequestConnection.take`) and answers it
///   from readiness callbacks there (the API proxy's usual exchange: a head sent upstream, the
///   answer relayed when its socket turns readable), then calls its `HandlerCompletion`.
/// - `.inTask`: the work runs in the connection's handler task, whose executor preference is that
///   same loop, so it runs on the loop thread and its awaits resume there.
///
/// A handler decides once: whatever it worked out (its route, its checks) travels in the answer
/// instead of being worked out again by the task.
public protocol HTTPHandler: Sendable {
    func answer(_ head: HTTPRequestHead, _ connection: RequestConnection) -> HandlerAnswer
    /// The handler the connections of `loop` call, asked once per loop when the server starts.
    /// A handler shared by the loops has its reference count moved between their cores on every
    /// call (each request copies the handler it calls); one of the loop's own keeps that count, and
    /// whatever else the handler copies per request, on the loop's core. Default: `self`.
    func loopHandler(for loop: EventLoop) -> any HTTPHandler
}

extension HTTPHandler {
    public func loopHandler(for loop: EventLoop) -> any HTTPHandler { self }
}

/// How a request is answered (`HTTPHandler.answer`).
public enum HandlerAnswer: Sendable {
    /// This complete answer, written now on the loop.
    case now(HTTPResponse)
    /// Taken on the loop (`RequestConnection.take`): the handler answers through the writer it got
    /// and says when it is done through its `HandlerCompletion`.
    case onLoop
    /// Run in the connection's handler task; the request is complete when the work returns (no
    /// answer becomes a `500`, an open stream is ended).
    case inTask(HandlerWork)
}

/// What a handler runs in the connection's task for one request.
public typealias HandlerWork = @Sendable (HTTPRequest, any HTTPResponseWriter) async -> Void

/// A handler that answers in a task, after an optional answer without one: the shape of handlers
/// that decide nothing worth carrying (the development provider, sample and test servers).
public protocol TaskHTTPHandler: HTTPHandler {
    func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse?
    func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async
}

extension TaskHTTPHandler {
    public func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse? { nil }

    public func answer(_ head: HTTPRequestHead, _ connection: RequestConnection) -> HandlerAnswer {
        if let response = immediateResponse(to: head, peer: connection.peer) { return .now(response) }
        return .inTask { [self] request, writer in await handle(request, writer: writer) }
    }
}
