#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1

/// A request body as the handler reads it: pieces from the read buffer, then from the socket
/// (with back-pressure), and the rest drained when the handler does not read it.
extension HTTPConnection {
    // MARK: Request body

    var declaredLength: Int? { requestBody.declaredLength }

    /// Called from `Exchange.next()` on the loop thread.
    func nextBodyPiece() async -> Result<[UInt8]?, HTTPBodyError> {
        if let failed = turn.bodyFailed { return .failure(failed) }
        if let piece = takeBufferedBody() { return piece }
        if requestBody.isComplete { return .success(nil) }
        if state == .closed { return .failure(.connectionClosed) }
        // Once a final head is out, an interim one would land inside that response's body: the
        // client has its answer and sends the body or not (the connection closes afterwards).
        if turn.expectContinue && !turn.continueSent && !turn.responseStarted {
            turn.continueSent = true
            output.append(contentsOf: HTTPConnection.continueLine)
            flush()
            // A failed send closes the connection (and frees its fd number): do not read it now.
            if state == .closed { return .failure(.connectionClosed) }
        }
        if let piece = readBodyPiece() { return piece }
        return await withUnsafeContinuation { continuation in
            bodyWaiter = continuation
            deadlines.arm(.progress, now: loop.now)
        }
    }

    static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    func feedBodyWaiter() {
        guard let waiter = bodyWaiter, let piece = readBodyPiece() else { return }
        bodyWaiter = nil
        deadlines.clear()
        waiter.resume(returning: piece)
    }

    /// Reads until the bytes give a body piece (or the body's end), the client's EOF shows, or the
    /// kernel has nothing more. nil: wait for the next readiness edge. One read is not enough: one
    /// that brings only framing bytes (a chunk header, a trailer) while the EOF waits behind them gets
    /// no further edge (found by the connection fuzzer: such a body waited for the progress timeout).
    func readBodyPiece() -> Result<[UInt8]?, HTTPBodyError>? {
        while readReady && !peerClosed {
            let before = input.readableCount
            readSocket(limit: 64 * 1024)
            let grew = input.readableCount > before
            if let piece = takeBufferedBody() { return piece }
            if !grew { break }
        }
        return peerClosed ? .failure(.connectionClosed) : nil
    }

    /// Takes the body bytes already buffered. nil when none are (and the body is not finished).
    func takeBufferedBody() -> Result<[UInt8]?, HTTPBodyError>? {
        if requestBody.isComplete { return .success(nil) }
        guard !input.isEmpty else { return nil }
        let (consumed, result) = requestBody.take(input.readable)
        input.consume(consumed)
        if case .failure(let error)? = result {
            turn.keepAlive = false
            turn.bodyFailed = error
        }
        return result
    }
}
