import Dispatch
import Glibc
import Logging
import Synchronization

/// Hears every session deleted in the PostgreSQL database, by any instance or command
/// (`gatehouse_session_ended`, announced by the sessions table's delete trigger of migration 0005),
/// so that an instance drops it from its cache at once instead of serving it until the cached entry
/// ages out (SPEC "Sessions the SPA controls": a session ended on one instance is refused by all).
///
/// One connection of its own, outside the pool, on a thread of its own. When the connection breaks,
/// notifications may have been missed: `onEnded(nil)` then asks for the whole cache to be dropped,
/// and the listener reconnects with a back-off. Through PgBouncer in transaction mode `LISTEN` does
/// not work (the server connection changes between transactions): `isDelivering` then stays false
/// and the cache's 0.5 s bound is what holds.
public final class PostgresSessionEndListener: Sendable {
    public static let channel = "gatehouse_session_ended"

    private let pool: PostgresConnectionPool
    private let logger: Logger
    private let onEnded: @Sendable (String?) -> Void
    private let state = Mutex(State())

    private struct State {
        var stopped = false
        var listening = false
    }

    /// - Parameter onEnded: called on the listener's thread with each ended session's id hash, or
    ///   nil when some may have been missed (forget every cached session).
    public init(pool: PostgresConnectionPool, logger: Logger, onEnded: @escaping @Sendable (String?) -> Void) {
        self.pool = pool
        self.logger = logger
        self.onEnded = onEnded
    }

    /// Whether the listener holds a connection with `LISTEN` in effect.
    public var isListening: Bool { state.withLock { $0.listening } }

    public func start() {
        let thread = DispatchQueue(label: "gatehouse.session-end-listener")
        thread.async { [self] in run() }
    }

    public func stop() {
        state.withLock { $0.stopped = true }
    }

    /// Announces `payload` on the channel after the transaction commits: a marker an instance waits
    /// to hear back (notifications reach every listener in commit order, so hearing it means every
    /// listener has been sent the endings committed before it).
    public func announce(_ payload: String) throws(SessionStoreError) {
        do {
            try pool.withTransaction { (tx: PostgresTransaction) throws(PostgresError) in
                try tx.run("SELECT pg_notify($1, $2)", [.text(Self.channel), .text(payload)])
            }
        } catch {
            throw SessionStoreError(error)
        }
    }

    private func run() {
        var backoff = 250
        var first = true
        while !state.withLock({ $0.stopped }) {
            let connection: PostgresConnection
            do {
                connection = try pool.dedicatedConnection()
                try connection.executeScript("LISTEN \(Self.channel)", deadline: .now + .seconds(5))
            } catch {
                logger.warning("session-end listener cannot listen; retrying", metadata: ["error": "\(error)"])
                usleep(UInt32(backoff) * 1000)
                backoff = min(backoff * 2, 5_000)
                continue
            }
            // Anything ended while no connection listened is unknown: drop the whole cache.
            if !first { onEnded(nil) }
            first = false
            backoff = 250
            state.withLock { $0.listening = true }
            while !state.withLock({ $0.stopped }) {
                do {
                    for payload in try connection.awaitNotifications(timeoutMilliseconds: 500) {
                        onEnded(payload)
                    }
                } catch {
                    logger.warning("session-end listener lost its connection; reconnecting", metadata: ["error": "\(error)"])
                    break
                }
            }
            state.withLock { $0.listening = false }
            connection.close()
        }
    }
}
