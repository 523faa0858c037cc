import GatehouseEncoding
import GatehouseSessions
import Logging
import Synchronization

/// Makes "ended here" mean "ended everywhere" before the ending is answered (SPEC "Sessions the SPA
/// controls": a session ended on one instance is refused by every instance for any request sent
/// after the ending answer arrived).
///
/// With PostgreSQL every deleted session is announced to every instance's listener
/// (`PostgresSessionEndListener`). After an ending, this instance announces a marker of its own and
/// waits to hear it back: notifications reach the listeners in commit order, so by then every
/// listener has been sent the ending too, and drops the session as it reads it. The wait is bounded
/// (`patience`); a marker that never comes back (PgBouncer in transaction mode swallows `LISTEN`)
/// is logged, and endings stop waiting for a minute (then try again): meanwhile the cache's
/// half-second bound is what holds.
final class SessionEndBarrier: Sendable {
    private let announce: @Sendable (String) throws(SessionStoreError) -> Void
    private let isListening: @Sendable () -> Bool
    private let executor: StoreExecutor
    private let logger: Logger
    /// Markers announced and not yet heard: true when heard, false after `patience`, nil when the
    /// announcement itself failed (the store is down: the endings' own errors say so).
    private let waiting = Mutex<[String: CheckedContinuation<Bool?, Never>]>([:])
    /// While a marker went unheard: when to try again.
    private let quietUntil = Mutex<ContinuousClock.Instant?>(nil)
    static let markerPrefix = "marker:"
    static let patience: Duration = .milliseconds(500)

    init(announce: @escaping @Sendable (String) throws(SessionStoreError) -> Void, isListening: @escaping @Sendable () -> Bool,
         executor: StoreExecutor, logger: Logger) {
        self.announce = announce
        self.isListening = isListening
        self.executor = executor
        self.logger = logger
    }

    /// From the listener: a marker heard back (other payloads are sessions, not for here).
    func heard(_ payload: String) {
        guard payload.hasPrefix(Self.markerPrefix) else { return }
        waiting.withLock { $0.removeValue(forKey: payload) }?.resume(returning: true)
    }

    /// Returns once every instance has been sent the endings committed before this call, or after
    /// `patience`.
    func pass() async {
        guard quietUntil.withLock({ $0.map { ContinuousClock.now >= $0 } ?? true }), isListening() else { return }
        let marker = Self.markerPrefix + RandomToken.make(bytes: 12)
        let heard = await withCheckedContinuation { (continuation: CheckedContinuation<Bool?, Never>) in
            waiting.withLock { $0[marker] = continuation }
            let announce = self.announce
            Task {
                do {
                    try await executor.run { () throws(SessionStoreError) in try announce(marker) }
                } catch {
                    self.waiting.withLock { $0.removeValue(forKey: marker) }?.resume(returning: nil)
                    return
                }
                try? await Task.sleep(for: Self.patience)
                self.waiting.withLock { $0.removeValue(forKey: marker) }?.resume(returning: false)
            }
        }
        if heard == false, isListening() {
            // Endings that waited side by side all time out: one of them says so.
            let first = quietUntil.withLock { quiet in
                let now = ContinuousClock.now
                defer { quiet = now + .seconds(60) }
                return quiet.map { now >= $0 } ?? true
            }
            guard first else { return }
            logger.warning("session endings are not heard back from PostgreSQL (LISTEN through PgBouncer in transaction mode?); other instances refuse an ended session within 0.5 s; not waiting for a minute")
        }
    }
}
