import EventLoops
import HTTP1

/// The browser's connection as a handler's `answer` sees it, for the one request being decided:
/// who sent it, what the handler keeps with the connection, and the request object with its writer
/// for a handler that takes the request on the loop. Only valid during `answer`, on the loop.
///
/// A request that comes from no connection (`HTTPHandler.respond(to:writer:)`: tests, tools) has a
/// detached one: a memo of its own, and no loop to answer on (`take` gives no completion).
public struct RequestConnection {
    unowned(unsafe) let connection: HTTPConnection?
    let detached: DetachedRequest?

    init(_ connection: HTTPConnection) {
        self.connection = connection
        detached = nil
    }

    init(detached: DetachedRequest) {
        connection = nil
        self.detached = detached
    }

    public var peer: PeerAddress {
        if let connection { return connection.peer }
        return detached!.request.peer
    }

    /// The request body's declared length: 0 for a bodiless request, nil when chunked.
    public var declaredBodyLength: Int? {
        if let connection { return connection.declaredLength }
        return detached!.request.body.declaredLength
    }

    /// The object the handler keeps with this connection across its requests, made by `make` the
    /// first time (or after the connection gave its idle buffers back). Loop thread only.
    public func memo<Memo: AnyObject>(_ make: () -> Memo) -> Memo {
        if let connection { return connection.handlerMemo(make) }
        return detached!.memo(make)
    }

    /// A small number the handler gives the request for the access record (`HTTPAccessRecord.category`):
    /// what it decided the request is, so the observer does not work it out again from the path.
    public func categorize(_ category: Int) {
        connection?.turn.category = category
    }

    /// The request, its writer and, on a connection, its completion, for a handler that answers on
    /// the loop (or that starts on the loop and goes on in a task). Made once: a later `.inTask`
    /// answer runs on the same request. A detached request has no loop to answer on: no completion.
    public func take(_ head: HTTPRequestHead) -> (request: HTTPRequest, writer: any HTTPResponseWriter, completion: HandlerCompletion?) {
        guard let connection else { return (detached!.request, detached!.writer, nil) }
        let (request, exchange) = connection.startExchange(head)
        return (request, exchange, HandlerCompletion(exchange: exchange))
    }
}

/// A request that comes from no connection, and what a handler keeps for it.
final class DetachedRequest {
    let request: HTTPRequest
    let writer: any HTTPResponseWriter
    private var kept: AnyObject?

    init(request: HTTPRequest, writer: any HTTPResponseWriter) {
        self.request = request
        self.writer = writer
    }

    func memo<Memo: AnyObject>(_ make: () -> Memo) -> Memo {
        if let kept = kept as? Memo { return kept }
        let made = make()
        kept = made
        return made
    }
}

extension HTTPHandler {
    /// Answers `request`, which comes from no connection (tests, tools), through `writer`: the
    /// handler's `answer` decides, and its work runs here. No loop: `.onLoop` cannot be answered.
    public func respond(to request: HTTPRequest, writer: any HTTPResponseWriter) async {
        switch answer(request.head, RequestConnection(detached: DetachedRequest(request: request, writer: writer))) {
        case .now(let response): await writer.respond(response)
        case .inTask(let work): await work(request, writer)
        case .onLoop: break
        }
    }
}
