import EventLoops
import HTTP1

/// Told (on the loop) that the upstream of an `UpstreamCall` answered, closed, or stayed silent
/// for the first-byte timeout: then ask the call for the head (`headIfArrived`), or `finish` it in a task.
public protocol UpstreamCallReceiver: AnyObject {
    func upstreamAnswered()
}

/// A request sent from the event loop without a task: a bodiless request on an idle pooled
/// connection, whose answer is awaited by readiness callback (`UpstreamClient.sendOnLoop`).
///
/// The proxy's usual exchange is a head out and a small answer back in one read. A task that
/// suspends for that answer costs two resumptions and three executor switches (each a look-up of
/// the task's executor preference under its status lock) and the async frames of every caller;
/// from the socket's readiness callback the answer is relayed in the same turn of the loop.
/// Everything else — an answer that arrives in pieces, a stale connection, a timeout, a malformed
/// head — is left to `finish()`, in a task, which continues the same exchange exactly as `send`
/// would have (the same reads, limits, errors and single retry).
public struct UpstreamCall: Sendable {
    let request: UpstreamRequest
    let connection: UpstreamConnection
    let pool: LoopPool
    let timeouts: UpstreamTimeouts
    let reused: Bool
    /// When the first byte of the answer must have come (`loop.now` when the head left + the
    /// first-byte timeout).
    let firstByteDeadline: UInt64

    /// Calls `receiver.upstreamAnswered()` on the loop once there is something to read, the
    /// upstream closed, or the first-byte timeout passed. The call keeps `receiver` until then.
    public func notify(_ receiver: some UpstreamCallReceiver) {
        // Part of the head still queued: only `finish` sends it (waiting for writability).
        if connection.hasQueuedOutput { return receiver.upstreamAnswered() }
        let now = connection.loop.now
        let left = firstByteDeadline > now ? firstByteDeadline - now : 0
        if !connection.notifyWhenReadable(receiver, timeout: left) {
            // Already readable (or closed: then `finish` reports it): nothing to wait for.
            receiver.upstreamAnswered()
        }
    }

    /// From `upstreamAnswered()`: the answer, if its whole final head has arrived and is valid;
    /// nil when the exchange must go on in a task (`finish`). Nothing is lost either way.
    public func headIfArrived() -> UpstreamResponse? {
        guard !connection.hasQueuedOutput,
              let (head, framing, keepAlive) = connection.readHeadNow(requestMethod: request.method) else { return nil }
        return UpstreamClient.response(head: head, framing: framing, keepAlive: keepAlive, connection: connection, pool: pool,
                               timeouts: timeouts)
    }

    /// The rest of the exchange, in a task on the loop: the head's remaining bytes sent, the answer's
    /// head read within the first-byte deadline; a stale pooled connection is given up and the
    /// request sent once more on another when `UpstreamClient.mayRetry` allows, as `send` does.
    public func finish() async throws(UpstreamError) -> UpstreamResponse {
        do throws(UpstreamError) {
            if connection.hasQueuedOutput {
                try await connection.write([], timeout: timeouts.firstByteNanoseconds)
            }
            let now = connection.loop.now
            guard now < firstByteDeadline else { throw .firstByteTimeout }
            let (head, framing, keepAlive) = try await connection.readHead(requestMethod: request.method,
                                                                           timeout: firstByteDeadline - now)
            return UpstreamClient.response(head: head, framing: framing, keepAlive: keepAlive, connection: connection,
                                   pool: pool, timeouts: timeouts)
        } catch {
            connection.close()
            guard UpstreamClient.mayRetry(method: request.method, hasBody: false, reusedConnection: reused, attempt: 1,
                                          error: error, wroteRequestBytes: connection.wroteRequestBytes) else { throw error }
            return try await pool.client.send(request, body: nil, timeouts: timeouts, firstAttempt: 2)
        }
    }
}
