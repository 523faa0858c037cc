import Foundation
import GatehouseSessions
import Testing
@testable import Gatehouse

/// A write reported as not done must not happen afterwards: a store call whose caller was answered
/// `timedOut` (a `503`) goes on inside SQLite's busy timeout (5 s), and once the lock is released it
/// must roll back instead of committing — else a logout answered `503` ends the session later,
/// without its revocation, and the retry finds nothing left to do.
@Suite("Sessions: a timed-out write never commits later (StoreCommitGate)")
struct StoreCommitGateTests {
    typealias Write = @Sendable (SQLiteSessionStore, Session) throws(SessionStoreError) -> Void

    static let writes: [(String, Write)] = [
        ("delete", { store, session throws(SessionStoreError) in _ = try store.deleteSession(idHash: session.idHash) }),
        ("update tokens", { store, session throws(SessionStoreError) in
            _ = try store.updateTokens(idHash: session.idHash, expectedVersion: session.version,
                                       tokens: .make(access: "access-2"), claims: nil)
        }),
    ]

    @Test("a write whose caller timed out rolls back when the lock is released", arguments: [0, 1])
    func timedOutWriteRollsBack(_ which: Int) async throws {
        let (name, write) = Self.writes[which]
        let directory = NSTemporaryDirectory() + "gatehouse-commit-gate-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/sessions.sqlite"
        let store = try SQLiteSessionStore(path: path, sealer: try testSealer(), logger: quietLogger)
        try store.migrate()
        let session = try store.createSession(.make(), replacing: nil)
        // One store thread: the read below runs only after the timed-out write has finished.
        let executor = StoreExecutor(threads: 1, timeout: .seconds(1))
        let lock = try SQLiteWriteLock(path: path)
        await #expect(throws: SessionStoreError.timedOut(seconds: 1)) {
            try await executor.run { () throws(SessionStoreError) in try write(store, session) }
        }
        // Released well inside SQLite's 5 s busy timeout: the write gets the lock and runs now.
        lock.release()
        let after = try await executor.run { () throws(SessionStoreError) in try store.loadSession(idHash: session.idHash, now: 1_000_000) }
        let stored = try #require(after, "\(name): the session was deleted after its caller was told it was not")
        #expect(stored.tokens.accessToken == "access-1", "\(name): the write committed after its caller was told it did not")
        #expect(stored.version == session.version)
        // Nothing is stuck: the same write for a caller that waits is done.
        try await executor.run { () throws(SessionStoreError) in try write(store, session) }
    }

    @Test("a write that commits in time is reported done, and a call nobody waits on commits")
    func permittedWrites() async throws {
        let directory = NSTemporaryDirectory() + "gatehouse-commit-gate-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteSessionStore(path: directory + "/sessions.sqlite", sealer: try testSealer(), logger: quietLogger)
        try store.migrate()
        let executor = StoreExecutor(threads: 1, timeout: .seconds(10))
        let first = try store.createSession(.make(), replacing: nil)
        #expect(try await executor.run { () throws(SessionStoreError) in try store.deleteSession(idHash: first.idHash) })
        // Outside the executor (an admin command): no permit, the write commits.
        let second = try store.createSession(.make(), replacing: nil)
        #expect(try store.deleteSession(idHash: second.idHash))
    }
}
