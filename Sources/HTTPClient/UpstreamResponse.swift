import EventLoops
import HTTP1

/// A response whose head has arrived; its body is read piece by piece. Read it to the end (or call
/// `discard()`) so the connection can go back to the pool.
public final class UpstreamResponse: @unchecked Sendable {
    public let head: HTTPResponseHead
    /// How the body is delimited and what length the browser is told, as decided when the head
    /// was read (`UpstreamResponseFraming`).
    public let framing: UpstreamResponseFraming
    private let connection: UpstreamConnection
    private let keepAlive: Bool
    private let pool: LoopPool
    private let maxIdle: Int
    private let idleTimeout: UInt64
    /// Loop-confined like its connection; each access a single statement that calls nothing back.
    @exclusivity(unchecked) private var released = false

    init(head: HTTPResponseHead, framing: UpstreamResponseFraming, connection: UpstreamConnection, keepAlive: Bool, pool: LoopPool,
         maxIdle: Int, idleTimeout: UInt64) {
        self.head = head
        self.framing = framing
        self.connection = connection
        self.keepAlive = keepAlive
        self.pool = pool
        self.maxIdle = maxIdle
        self.idleTimeout = idleTimeout
        if connection.bodyDone { release() }
    }

    /// The next piece of the body, nil at its end.
    public func nextBodyPiece() async throws(UpstreamError) -> [UInt8]? {
        try await nextBodyPiece(idleTimeout: idleTimeout)
    }

    /// As `nextBodyPiece()`, failing with `.bodyTimeout` after `idleTimeout` nanoseconds of silence.
    public func nextBodyPiece(idleTimeout: UInt64) async throws(UpstreamError) -> [UInt8]? {
        if released { return nil }
        do {
            let piece = try await connection.nextBodyPiece(idleTimeout: idleTimeout)
            if piece == nil || connection.bodyDone { release() }
            return piece
        } catch {
            released = true
            connection.close()
            throw error
        }
    }

    /// The complete body if it has already arrived (then the connection goes back to the pool), else
    /// nil and nothing is consumed: read it with `nextBodyPiece()`.
    public func wholeBodyIfBuffered() -> [UInt8]? {
        guard !released, let body = connection.takeWholeBodyIfBuffered() else { return nil }
        release()
        return body
    }

    /// The object of type `Memo` kept with this answer's connection, made by `make` the first time:
    /// what a caller derives from one answer and may reuse for the next answer on the same
    /// connection (whose parser hands back the very same field list when the lines repeat). Nil
    /// off the connection's loop (the connection's state is the loop's alone).
    public func connectionMemo<Memo: AnyObject>(_ make: () -> Memo) -> Memo? {
        guard connection.loop.inEventLoop else { return nil }
        if let kept = connection.memo as? Memo { return kept }
        let memo = make()
        connection.memo = memo
        return memo
    }

    /// Gives up on the rest of the body: the connection is closed, never reused half-read.
    public func discard() {
        guard !released else { return }
        released = true
        connection.close()
    }

    private func release() {
        guard !released else { return }
        released = true
        if keepAlive && connection.cleanlyFinished {
            pool.put(connection, limit: maxIdle)
        } else {
            connection.close()
        }
    }
}
