import EventLoops
import Foundation
import GatehouseSessions
import Synchronization
import Testing
@testable import Gatehouse

/// The store's own threads (issue 12, "no event loop waits on a database"): a store call runs off the
/// caller's thread, a caller waits at most the timeout, and a full queue refuses at once.
@Suite("Sessions: store calls off the event loops (StoreExecutor)")
struct StoreExecutorTests {
    @Test("A call runs on a store thread, not on the caller's")
    func runsOnItsOwnThread() async throws {
        let executor = StoreExecutor(threads: 1)
        let caller = UInt(pthread_self())
        let worker = try await executor.run { () throws(SessionStoreError) in UInt(pthread_self()) }
        #expect(worker != caller)
        // Every call goes to the same (single) store thread.
        #expect(try await executor.run { () throws(SessionStoreError) in UInt(pthread_self()) } == worker)
    }

    @Test("A request's task that awaits the store resumes on its own event loop")
    func resumesOnTheLoop() async throws {
        let loop = try EventLoop(index: 0)
        loop.start()
        defer { loop.stopAndJoin() }
        let executor = StoreExecutor(threads: 1)
        let (before, during, after) = await Task(executorPreference: loop) {
            let before = loop.inEventLoop
            let during = try? await executor.run { () throws(SessionStoreError) in loop.inEventLoop }
            return (before, during, loop.inEventLoop)
        }.value
        #expect(before)
        #expect(during == false, "the store call ran on the loop")
        #expect(after)
    }

    @Test("Typed store errors reach the caller unchanged")
    func errorsPassThrough() async {
        let executor = StoreExecutor(threads: 1)
        await #expect(throws: SessionStoreError.encoding("x")) {
            try await executor.run { () throws(SessionStoreError) -> Int in throw .encoding("x") }
        }
    }

    @Test("A call stuck in the store ends for its caller at the timeout (timedOut, a 503)")
    func timeoutEndsTheWait() async {
        let executor = StoreExecutor(threads: 1, timeout: .milliseconds(50))
        let release = DispatchSemaphore(value: 0)
        await #expect(throws: SessionStoreError.timedOut(seconds: 0.05)) {
            try await executor.run { () throws(SessionStoreError) -> Int in
                release.wait()  // a lock held elsewhere, until the test lets go
                return 1
            }
        }
        #expect(SessionStoreError.timedOut(seconds: 0.05).isUnavailable)
        release.signal()
        // The thread is free again once the stuck call returns.
        let after = try? await executor.run { () throws(SessionStoreError) in 2 }
        #expect(after == 2)
    }

    @Test("A full queue refuses a call at once (overloaded) instead of queueing without bound")
    func fullQueueRefuses() async {
        let executor = StoreExecutor(threads: 1, queueLimit: 1)
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        executor.submit {
            started.signal()
            release.wait()
        }
        started.wait()  // the one thread is busy
        executor.submit {}  // the one queue slot is taken
        await #expect(throws: SessionStoreError.overloaded(queued: 1)) {
            try await executor.run { () throws(SessionStoreError) in 3 }
        }
        release.signal()
    }
}
