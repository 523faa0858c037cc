#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import Synchronization
import Testing

/// `DetachedThread` and `ThreadCondition`: the pthread primitives that replace Foundation's
/// `Thread` and `NSCondition` (which would link all of Foundation).
@Suite("EventLoops: detached named threads and the monotonic condition variable")
struct ThreadPrimitivesTests {
    @Test("A detached thread runs its body under its name, cut to the kernel's 15 bytes")
    func namedThread() async {
        let name: String = await withCheckedContinuation { continuation in
            let started = DetachedThread.start(name: "gatehouse-test-thread-name") {
                // The kernel's record of the calling thread's name, with a newline.
                var buffer = [UInt8](repeating: 0, count: 32)
                let fd = open("/proc/thread-self/comm", O_RDONLY)
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                close(fd)
                continuation.resume(returning: String(decoding: buffer.prefix(max(0, count)), as: UTF8.self))
            }
            #expect(started)
        }
        #expect(name == "gatehouse-test-\n")
    }

    @Test("An event loop's thread is named after it, not after the thread that started it")
    func loopThreadName() async throws {
        let loop = try EventLoop(index: 7)
        loop.start()
        defer { loop.stopAndJoin() }
        let name: String = await withCheckedContinuation { continuation in
            loop.execute {
                var buffer = [UInt8](repeating: 0, count: 32)
                let fd = open("/proc/thread-self/comm", O_RDONLY)
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                close(fd)
                continuation.resume(returning: String(decoding: buffer.prefix(max(0, count)), as: UTF8.self))
            }
        }
        #expect(name == "gatehouse-loop7\n")
    }

    @Test("A deadline wait ends false, and not before the monotonic deadline (not read as wall time)")
    func deadlinePasses() {
        let condition = ThreadCondition()
        let deadline = EventLoop.monotonicNow() + 1_000_000
        condition.lock()
        // Nobody signals: only spurious wake-ups return true, and at most a few.
        var waits = 0
        while condition.wait(untilMonotonic: deadline) && waits < 100 { waits += 1 }
        condition.unlock()
        #expect(waits < 100)
        #expect(EventLoop.monotonicNow() >= deadline)
    }

    @Test("A waiter sees the state another thread changed and signalled")
    func signalWakesWaiter() {
        let condition = ThreadCondition()
        let ready = Mutex(false)
        DetachedThread.start(name: "test-signaller") {
            condition.lock()
            ready.withLock { $0 = true }
            condition.signal()
            condition.unlock()
        }
        condition.lock()
        // Bounded: the signaller runs at once; a minute covers any scheduling delay.
        let deadline = EventLoop.monotonicNow() + 60_000_000_000
        while !ready.withLock({ $0 }) && EventLoop.monotonicNow() < deadline {
            condition.wait(untilMonotonic: deadline)
        }
        condition.unlock()
        #expect(ready.withLock { $0 })
    }
}
