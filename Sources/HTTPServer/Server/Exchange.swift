import EventLoops
import HTTP1

/// One request/response exchange as the handler sees it: the request body stream and the response
/// writer in one object (one allocation per request). Every call hops to the connection's loop first,
/// and fails once the exchange is over or the connection is gone.
final class Exchange: HTTPRequestBody, HTTPResponseWriter, @unchecked Sendable {
    private let connection: HTTPConnection
    private var finished = false

    init(connection: HTTPConnection) {
        self.connection = connection
    }

    var loop: EventLoop { connection.loop }

    private var isCurrent: Bool { connection.current === self && connection.state != .closed }

    // MARK: HTTPRequestBody

    var declaredLength: Int? { connection.declaredLength }

    func next() async throws(HTTPBodyError) -> [UInt8]? {
        await connection.loop.hop()
        guard isCurrent else { throw .connectionClosed }
        return try await connection.nextBodyPiece().get()
    }

    // MARK: HTTPResponseWriter

    var headWritten = false

    func respond(_ response: HTTPResponse) async {
        await connection.loop.hop()
        respondOnLoop(response)
    }

    func respondImmediately(_ response: HTTPResponse) -> Bool {
        guard connection.loop.inEventLoop else { return false }
        respondOnLoop(response)
        return true
    }

    private func respondOnLoop(_ response: HTTPResponse) {
        guard isCurrent, !headWritten else { return }
        headWritten = true
        finished = true
        connection.writeComplete(response)
    }

    func writeHead(_ head: HTTPResponseHead, contentLength: Int?) async throws(HTTPWriteError) {
        await connection.loop.hop()
        guard isCurrent else { throw .connectionClosed }
        guard !headWritten else { throw .invalidState("head already written") }
        headWritten = true
        connection.writeStreamHead(head, contentLength: contentLength)
    }

    func writeBody(_ bytes: [UInt8]) async throws(HTTPWriteError) {
        await connection.loop.hop()
        guard isCurrent else { throw .connectionClosed }
        guard headWritten, !finished else { throw .invalidState("body outside a streamed response") }
        guard await connection.writeStreamBody(bytes) else { throw .connectionClosed }
    }

    func finish() async throws(HTTPWriteError) {
        await connection.loop.hop()
        guard isCurrent else { throw .connectionClosed }
        guard headWritten, !finished else { throw .invalidState("finish outside a streamed response") }
        finished = true
        connection.finishStream()
    }

    func switchProtocols(_ head: HTTPResponseHead) async throws(HTTPWriteError) -> any TunnelEndpoint {
        await connection.loop.hop()
        guard isCurrent else { throw .connectionClosed }
        guard !headWritten else { throw .invalidState("head already written") }
        guard let endpoint = connection.switchProtocols(head) else {
            if connection.state == .closed { throw .connectionClosed }
            throw .invalidState("the exchange cannot switch protocols")
        }
        headWritten = true
        finished = true
        return endpoint
    }

    func abort() {
        let connection = self.connection
        // Over now, not when the close runs: the handler usually returns at once, and
        // `handlerReturned` must not end the stream as if the body were whole (a cut chunked body
        // would get its last chunk and look complete on a keep-alive connection).
        if connection.loop.inEventLoop { finished = true }
        connection.loop.execute { [self] in
            if self.isCurrent { connection.close() }
        }
    }

    /// The handler returned: complete whatever it left open.
    func handlerReturned() async {
        await connection.loop.hop()
        handlerReturnedOnLoop()
    }

    /// `handlerReturned` without a suspension when the caller is on the loop (the usual case); false
    /// when it must be awaited.
    func handlerReturnedImmediately() -> Bool {
        guard connection.loop.inEventLoop else { return false }
        handlerReturnedOnLoop()
        return true
    }

    /// `handlerReturned` now when the caller is on the loop, else as soon as the loop gets to it.
    func handlerReturnedSoon() {
        if handlerReturnedImmediately() { return }
        connection.loop.execute { [self] in handlerReturnedOnLoop() }
    }

    private func handlerReturnedOnLoop() {
        guard isCurrent else { return }
        if !headWritten {
            headWritten = true
            finished = true
            connection.writeComplete(HTTPResponse(
                status: 500, headers: ["Content-Type": "application/json"],
                body: "{\"error\":\"server_error\",\"error_description\":\"The handler produced no response.\"}"))
        } else if !finished {
            finished = true
            connection.finishStream()
        }
    }
}
