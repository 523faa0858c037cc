/// Why a session store operation failed. Carries no token, cookie value or other secret.
public enum SessionStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database failed (unavailable, locked past the busy timeout, constraint, disk full…).
    case database(SQLiteError)
    /// Sealing or opening a stored secret failed.
    case sealing(SealError)
    /// A stored or new value could not be encoded or decoded.
    case encoding(String)
    /// `sessions revoke ID`: the id must be at least 8 hex characters of the session's id hash.
    case invalidIDPrefix(String)
    /// `sessions revoke ID`: the prefix matches several sessions; nothing was deleted.
    case ambiguousIDPrefix(prefix: String, matches: Int)
    /// The store did not answer within the gateway's store timeout (a lock held elsewhere, a database
    /// that does not answer). A read may still complete later; a write does not (it rolls back,
    /// `StoreCommitGate`).
    case timedOut(seconds: Double)
    /// The gateway's queue of store calls is full; the call was not attempted.
    case overloaded(queued: Int)
    /// The database cannot answer now (PostgreSQL unreachable, connection lost, every pooled
    /// connection busy, a statement timeout): nothing is known to have changed; retry later.
    case unavailable(String)
    /// PostgreSQL refused a statement (constraint, schema missing…).
    case postgres(PostgresError)

    public var description: String {
        switch self {
        case .database(let error): return "session database error: \(error)"
        case .sealing(let error): return "session sealing error: \(error)"
        case .encoding(let reason): return "session encoding error: \(reason)"
        case .invalidIDPrefix(let prefix):
            return "'\(prefix)' is not a session id: give at least 8 hex characters as shown by `gatehouse sessions list`"
        case .ambiguousIDPrefix(let prefix, let matches):
            return "'\(prefix)' matches \(matches) sessions; give more characters of the id"
        case .timedOut(let seconds): return "session store did not answer within \(seconds) s"
        case .overloaded(let queued): return "session store busy: \(queued) calls already queued"
        case .unavailable(let reason): return "session database unavailable: \(reason)"
        case .postgres(let error): return "session database error: \(error)"
        }
    }
}

extension SessionStoreError {
    /// The store error for a PostgreSQL failure: `.unavailable` when the server could not answer.
    init(_ error: PostgresError) {
        self = error.isUnavailable ? .unavailable(error.description) : .postgres(error)
    }

    /// True when the database could not answer (as opposed to refusing or failing an operation).
    public var isUnavailable: Bool {
        switch self {
        case .unavailable, .timedOut, .overloaded: true
        case .database(let error): error.isBusy || error.isUnwritable
        default: false
        }
    }
}

/// Validation of the id given to `sessions revoke ID`, shared by every store.
enum SessionIDPrefix {
    static let minimumLength = 8

    /// The prefix in lowercase, or `invalidIDPrefix` unless it is 8–64 hex characters.
    static func normalized(_ prefix: String) throws(SessionStoreError) -> String {
        let lower = prefix.lowercased()
        guard lower.utf8.count >= minimumLength, lower.utf8.count <= 64,
              lower.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                  || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }) else {
            // Echo only safe input back: a hex-looking prefix is not a secret; anything else is hidden.
            throw .invalidIDPrefix(prefix.utf8.count <= 64 && prefix.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7f }
                                   ? prefix : "<unprintable>")
        }
        return lower
    }
}
