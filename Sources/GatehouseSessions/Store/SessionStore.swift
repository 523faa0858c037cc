/// Where sessions, pending logins and seen logout-token ids live: every role a storage engine
/// implements, each a small protocol so that a second engine (PostgreSQL) implements the same small
/// pieces and passes the same conformance suite, role by role.
///
/// - `SessionRecordStore`: one session's life on the request path.
/// - `PendingLoginStore`: the state between `/login` and `/callback`.
/// - `LogoutReplayCache`: back-channel logout `jti`s already seen.
/// - `SessionAdministration`: list, revoke, count, purge, ping (CLI, metrics, readiness, maintenance).
///
/// Stores: `SealedSessionStore` over an engine — `SQLiteSessionStore` (production; several processes
/// may share one file) or `PostgresSessionStore` (several instances) — and `InMemorySessionStore`
/// (tests). Endpoints never hold a store: they go through the gateway's `SessionCache`, the one door
/// to sessions.
public typealias SessionStore = SessionRecordStore & PendingLoginStore & LogoutReplayCache & SessionAdministration

/// `now + duration` without trapping on hostile or absurd values.
func saturatingAdd(_ a: Int64, _ b: Int64) -> Int64 {
    let (sum, overflow) = a.addingReportingOverflow(b)
    if overflow { return b > 0 ? Int64.max : Int64.min }
    return sum
}
