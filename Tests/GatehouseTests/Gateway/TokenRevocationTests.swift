@testable import Gatehouse
import GatehouseSessions
import Synchronization
import Testing

/// Logout revokes every ended session's tokens, a few at a time, and waits a bounded time.
@Suite("Token revocation at logout")
struct TokenRevocationTests {
    @Test("refresh tokens first, then access tokens, for every session")
    func jobsForEverySession() {
        let sessions = (0..<3).map { index in
            Session(idHash: "h\(index)", sub: "alice", sid: nil, claims: [],
                    tokens: TokenSet(accessToken: "at\(index)", refreshToken: index == 1 ? nil : "rt\(index)"),
                    createdAt: 0, lastSeenAt: 0, idleExpiresAt: 100, expiresAt: 100, version: 1)
        }
        let jobs = TokenRevocation.jobs(for: sessions)
        #expect(jobs.map(\.token) == ["rt0", "rt2", "at0", "at1", "at2"])
        #expect(jobs.map(\.hint) == [.refreshToken, .refreshToken, .accessToken, .accessToken, .accessToken])
    }

    @Test("300 revocations all run, never more than four at once")
    func boundedConcurrency() async {
        let inFlight = Atomic<Int>(0)
        let highest = Atomic<Int>(0)
        let done = Atomic<Int>(0)
        await TokenRevocation.runBounded(Array(0..<300), concurrency: TokenRevocation.concurrency, waitingAtMost: .seconds(60)) { _ in
            let now = inFlight.add(1, ordering: .sequentiallyConsistent).newValue
            _ = highest.max(now, ordering: .sequentiallyConsistent)
            await Task.yield()
            inFlight.subtract(1, ordering: .sequentiallyConsistent)
            done.add(1, ordering: .sequentiallyConsistent)
        }
        #expect(done.load(ordering: .sequentiallyConsistent) == 300)
        #expect(highest.load(ordering: .sequentiallyConsistent) <= 4)
        #expect(highest.load(ordering: .sequentiallyConsistent) >= 1)
    }

    @Test("the wait is bounded: revocations that do not finish do not hold the answer")
    func boundedWait() async {
        let release = Atomic<Bool>(false)
        let started = Atomic<Int>(0)
        await TokenRevocation.runBounded(Array(0..<10), concurrency: 2, waitingAtMost: .milliseconds(100)) { _ in
            started.add(1, ordering: .sequentiallyConsistent)
            while !release.load(ordering: .sequentiallyConsistent) { try? await Task.sleep(for: .milliseconds(5)) }
        }
        // Returned while the first two still run: none of the others started yet.
        #expect(started.load(ordering: .sequentiallyConsistent) == 2)
        release.store(true, ordering: .sequentiallyConsistent)
    }
}
