/// The caller's side of a store write: whether it may still commit.
///
/// A caller that waits at most a few seconds for the store (the gateway's `GATEHOUSE_STORE_TIMEOUT`)
/// is answered "not done" (`503`) when that passes, but the blocking engine call goes on: SQLite's
/// busy timeout (5 s) or PostgreSQL's statement timeout end it, not the caller. Had it then
/// committed, a logout answered `503` would end the session later without its revocation or
/// end-session redirect, and the retry the `503` asked for would find nothing left to do. So every
/// write asks, right before COMMIT, whether its caller still waits, and rolls back when it does not:
/// a write reported as not done never happens afterwards.
public protocol StoreCommitPermit: Sendable {
    /// Asked once per transaction, right before COMMIT. True: the caller still waits, and from now
    /// on it is given this call's result (it can no longer time out). False: the caller has been
    /// answered already; the transaction must roll back.
    func mayCommit() -> Bool
}

public enum StoreCommitGate {
    /// The permit of the store call running on this thread (bound by the code that runs the call
    /// for a waiting caller); none for calls nobody waits on (admin commands, fire-and-forget writes).
    @TaskLocal public static var permit: (any StoreCommitPermit)?

    /// Whether the transaction running now may commit.
    static func mayCommit() -> Bool {
        permit?.mayCommit() ?? true
    }

    static let abandonedMessage = "the caller stopped waiting (store timeout): rolled back, nothing written"
}
