import Dispatch
import GatehouseEncoding
import Synchronization

/// Bounds on the pool's connections and on every wait, so that a call into PostgreSQL ends within a
/// known time whatever the server does.
public struct PostgresPoolSettings: Sendable, Equatable {
    /// Connections open at most; a call beyond them waits for one to be returned.
    public var maxConnections: Int = 4
    /// How long a call waits for a free connection before failing as unavailable.
    public var acquireTimeout: Duration = .seconds(5)
    /// libpq `connect_timeout` (seconds), unless the URI or `PGCONNECT_TIMEOUT` sets one.
    public var connectTimeoutSeconds: Int = 5
    /// `SET LOCAL statement_timeout` of every transaction.
    public var statementTimeout: Duration = .seconds(5)
    /// How much longer than the statement timeout the client waits for an answer before closing the
    /// socket (a server that stopped answering entirely, e.g. a network partition).
    public var answerMargin: Duration = .seconds(2)
    /// First and longest pause between connection attempts after a failed one.
    public var initialBackoff: Duration = .milliseconds(250)
    public var maxBackoff: Duration = .seconds(5)

    public init() {}
}

/// A small, bounded pool of libpq connections to one database, shared by every thread of the
/// process. Each use is one transaction (`withTransaction`) and carries no state to the next:
/// no session `SET`, no named prepared statement, no session-level advisory lock, no `LISTEN` —
/// so a connection through PgBouncer in transaction mode behaves exactly like a direct one.
///
/// When PostgreSQL goes away, calls fail with `PostgresError.Kind.unavailable` (fast, during an
/// exponential back-off between connection attempts) and succeed again once it is back: idle
/// connections found dead are replaced, and a transaction whose `BEGIN` fails on a reused
/// connection is retried once on a new one (nothing of it ran).
public final class PostgresConnectionPool: Sendable {
    /// The URI with its passwords replaced by `***`: safe to log and print.
    public let displayTarget: String
    public let settings: PostgresPoolSettings
    private let uri: String
    private let defaults: [(String, String)]
    private let permits: DispatchSemaphore
    private let state = Mutex(State())

    private struct State: Sendable {
        var idle: [PostgresConnection] = []
        var retryAt: ContinuousClock.Instant?
        var backoff: Duration = .zero
        var lastFailure = ""
        var closed = false
    }

    /// A pool for `uri` (a `postgres://` or `postgresql://` URI). Connects lazily, on first use.
    public init(uri: String, settings: PostgresPoolSettings = PostgresPoolSettings(),
                environment: [String: String] = [:]) {
        self.uri = uri
        self.displayTarget = URIPassword.redacting(uri)
        self.settings = settings
        self.permits = DispatchSemaphore(value: max(1, settings.maxConnections))
        var defaults: [(String, String)] = []
        // Given before the URI (which overrides them), and only when the environment does not set
        // them, so `PGCONNECT_TIMEOUT` / `PGAPPNAME` keep the meaning libpq gives them.
        if environment["PGCONNECT_TIMEOUT"] == nil {
            defaults.append(("connect_timeout", String(max(1, settings.connectTimeoutSeconds))))
        }
        if environment["PGAPPNAME"] == nil { defaults.append(("application_name", "gatehouse")) }
        self.defaults = defaults
    }

    /// Runs `body` in one transaction on a pooled connection: `BEGIN`, the statement timeout as
    /// `SET LOCAL`, `body`, `COMMIT` (or `ROLLBACK` when `body` throws).
    ///
    /// - Parameter statementTimeout: overrides the settings' (migrations may take longer).
    /// - Throws: `PostgresError`; `.unavailable` when no connection is free within `acquireTimeout`,
    ///   the server cannot be reached, the connection broke or an answer did not come in time.
    @discardableResult
    public func withTransaction<R>(statementTimeout: Duration? = nil,
                                   _ body: (PostgresTransaction) throws(PostgresError) -> R) throws(PostgresError) -> R {
        let timeout = statementTimeout ?? settings.statementTimeout
        guard permits.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds(settings.acquireTimeout)))) == .success else {
            throw .unavailable("all \(settings.maxConnections) PostgreSQL connections stayed busy for \(settings.acquireTimeout)")
        }
        defer { permits.signal() }
        let answerWithin = timeout + settings.answerMargin
        var lease = try checkout()
        do {
            try begin(lease.connection, statementTimeout: timeout, answerWithin: answerWithin)
        } catch {
            guard lease.reused, error.kind == .unavailable else { throw error }
            // A pooled connection that died while idle (server restart): nothing of this
            // transaction ran, so try once more on a fresh connection.
            dropIdle()
            lease = try checkout()
            try begin(lease.connection, statementTimeout: timeout, answerWithin: answerWithin)
        }
        let active = PostgresTransaction(connection: lease.connection, answerWithin: answerWithin)
        do {
            let result = try body(active)
            try active.run("COMMIT")
            checkin(lease.connection)
            return result
        } catch {
            if lease.connection.isUsable && lease.connection.isInTransaction {
                _ = try? active.run("ROLLBACK")
            }
            if lease.connection.isUsable && !lease.connection.isInTransaction {
                checkin(lease.connection)
            } else {
                lease.connection.close()
            }
            throw error
        }
    }

    /// Closes idle connections and refuses later calls; connections in use close when returned.
    public func close() {
        let idle = state.withLock { state in
            state.closed = true
            defer { state.idle.removeAll() }
            return state.idle
        }
        idle.forEach { $0.close() }
    }

    // MARK: - Connections

    private struct Lease {
        let connection: PostgresConnection
        /// Taken from the idle list (may have died while idle) rather than just opened.
        let reused: Bool
    }

    private enum Checkout: Sendable {
        case idle(PostgresConnection)
        case connect
        case refused(PostgresError)
    }

    private func checkout() throws(PostgresError) -> Lease {
        let now = ContinuousClock.now
        let decision = state.withLock { state -> Checkout in
            if state.closed { return .refused(.unavailable("the PostgreSQL pool is closed")) }
            if let connection = state.idle.popLast() { return .idle(connection) }
            if let retryAt = state.retryAt, now < retryAt {
                return .refused(.unavailable("\(state.lastFailure) (next connection attempt in \(retryAt - now))"))
            }
            return .connect
        }
        switch decision {
        case .idle(let connection):
            return Lease(connection: connection, reused: true)
        case .refused(let error):
            throw error
        case .connect:
            do throws(PostgresError) {
                let connection = try PostgresConnection(uri: uri, defaults: defaults) { [uri] in
                    URIPassword.scrubbing($0, of: uri)
                }
                state.withLock { state in
                    state.retryAt = nil
                    state.backoff = .zero
                }
                return Lease(connection: connection, reused: false)
            } catch {
                let settings = settings
                state.withLock { state in
                    state.backoff = min(max(state.backoff * 2, settings.initialBackoff), settings.maxBackoff)
                    state.retryAt = ContinuousClock.now + state.backoff
                    state.lastFailure = error.message
                }
                throw error
            }
        }
    }

    /// A connection of its own, outside the pool (the `LISTEN` of `PostgresSessionEndListener`:
    /// a listening session must stay on one server connection, which a pooled one does not).
    func dedicatedConnection() throws(PostgresError) -> PostgresConnection {
        try PostgresConnection(uri: uri, defaults: defaults) { [uri] in URIPassword.scrubbing($0, of: uri) }
    }

    private func checkin(_ connection: PostgresConnection) {
        let keep = state.withLock { state -> Bool in
            guard !state.closed, connection.isUsable, state.idle.count < settings.maxConnections else { return false }
            state.idle.append(connection)
            return true
        }
        if !keep { connection.close() }
    }

    /// `BEGIN` and the transaction's timeouts in one round trip; the connection is closed when it fails.
    private func begin(_ connection: PostgresConnection, statementTimeout: Duration,
                       answerWithin: Duration) throws(PostgresError) {
        do {
            try PostgresTransaction(connection: connection, answerWithin: answerWithin).begin(statementTimeout: statementTimeout)
        } catch {
            connection.close()
            throw error
        }
    }

    /// After one idle connection proved dead, the others (opened before the same restart) are too.
    private func dropIdle() {
        let idle = state.withLock { state in
            defer { state.idle.removeAll() }
            return state.idle
        }
        idle.forEach { $0.close() }
    }
}

private func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue + attoseconds / 1_000_000_000
}
