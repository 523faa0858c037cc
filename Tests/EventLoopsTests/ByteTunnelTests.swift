#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
@testable import EventLoops

/// `ByteTunnel` between two socketpairs on a real event loop: the test holds the outer ends
/// (`browser`, `upstream`), the tunnel the inner ones.
@Suite struct ByteTunnelTests {
    final class Fixture: ByteTunnelDelegate, @unchecked Sendable {
        let loop: EventLoop
        let browser: Int32
        let upstream: Int32
        var tunnel: ByteTunnel!
        private let closedFlag = Atomic<Bool>(false)
        var isClosed: Bool { closedFlag.load(ordering: .relaxed) }
        private let carried = Atomic<Int>(0)
        var carriedToUpstream: Int { carried.load(ordering: .relaxed) }

        init(socketBuffer: Int32? = nil) throws {
            loop = try EventLoop(index: 90)
            loop.start()
            var a: [Int32] = [0, 0], b: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &a) == 0)
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &b) == 0)
            browser = a[0]
            upstream = b[0]
            if let socketBuffer {
                for fd in [a[0], a[1], b[0], b[1]] {
                    Sockets.setOption(fd, level: SOL_SOCKET, name: SO_SNDBUF, value: socketBuffer)
                    Sockets.setOption(fd, level: SOL_SOCKET, name: SO_RCVBUF, value: socketBuffer)
                }
            }
            try Sockets.setNonBlocking(a[1])
            try Sockets.setNonBlocking(b[1])
            let (inner1, inner2) = (a[1], b[1])
            onLoop {
                let first = SocketEndpoint(fd: inner1, loop: self.loop, leftover: Array("early".utf8))
                let second = SocketEndpoint(fd: inner2, loop: self.loop)
                self.tunnel = ByteTunnel(first: first, second: second, loop: self.loop, scratch: TunnelScratch(),
                                         watermark: 64 * 1024)
                self.tunnel.delegate = self
                self.tunnel.start()
            }
        }

        func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
            let result = Mutex<T?>(nil)
            let done = DispatchSemaphoreLite()
            loop.execute {
                result.withLock { $0 = body() }
                done.signal()
            }
            done.wait()
            return result.withLock { $0! }
        }

        func stop() {
            onLoop { self.tunnel.close() }
            Glibc.close(browser)
            Glibc.close(upstream)
            loop.stopAndJoin()
        }

        func tunnel(_ tunnel: ByteTunnel, carried bytes: UnsafeRawBufferPointer, _ direction: ByteTunnel.Direction) {
            if direction == .firstToSecond { carried.add(bytes.count, ordering: .relaxed) }
        }
        func tunnelEndRequested(_ tunnel: ByteTunnel) { tunnel.close() }
        func tunnelClosed(_ tunnel: ByteTunnel) { closedFlag.store(true, ordering: .relaxed) }
    }

    /// Reads up to `count` bytes (fewer at EOF), waiting at most 10 s in all.
    static func read(_ fd: Int32, count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let deadline = EventLoop.monotonicNow() + 10_000_000_000
        while out.count < count && EventLoop.monotonicNow() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, min($0.count, count - out.count), 0) }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    static func readToEOF(_ fd: Int32) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = EventLoop.monotonicNow() + 10_000_000_000
        while EventLoop.monotonicNow() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n <= 0 { return out }
            out += buffer[0..<n]
        }
        return nil
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) -> Int {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        return sent
    }

    @Test func relaysBothWaysStartingWithTheLeftover() throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(Self.send(f.browser, Array("hello".utf8)) == 5)
        #expect(Self.read(f.upstream, count: 10) == Array("earlyhello".utf8))
        #expect(Self.send(f.upstream, Array("world".utf8)) == 5)
        #expect(Self.read(f.browser, count: 5) == Array("world".utf8))
    }

    @Test func aReaderThatStopsBoundsWhatTheTunnelBuffers() throws {
        let f = try Fixture(socketBuffer: 16 * 1024)
        defer { f.stop() }
        let total = 8 << 20
        let payload = (0..<total).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let sent = Atomic<Int>(0)
        let writer = Thread {
            sent.store(Self.send(f.browser, payload), ordering: .relaxed)
        }
        // The upstream reads nothing: the tunnel must stop reading the browser at its watermark.
        var maxBuffered = 0
        let deadline = EventLoop.monotonicNow() + 10_000_000_000
        while EventLoop.monotonicNow() < deadline {
            let buffered = f.onLoop { f.tunnel.buffered(.firstToSecond) }
            maxBuffered = max(maxBuffered, buffered)
            if buffered >= f.tunnel.watermark { break }
            usleep(1_000)
        }
        #expect(maxBuffered >= f.tunnel.watermark, "the tunnel never filled its buffer")
        // Several more turns of the loop: still bounded, and the writer is held back by TCP.
        for _ in 0..<50 {
            let buffered = f.onLoop { f.tunnel.buffered(.firstToSecond) }
            #expect(buffered <= f.tunnel.watermark + TunnelScratch.size)
        }
        #expect(f.carriedToUpstream < total / 2)
        // Reading resumes the flow; every byte arrives, in order.
        let received = Self.read(f.upstream, count: total + 5)
        writer.join()
        #expect(sent.load(ordering: .relaxed) == total)
        #expect(received.count == total + 5)
        #expect(Array(received.prefix(5)) == Array("early".utf8))
        #expect(Array(received.dropFirst(5)) == payload)
        #expect(f.onLoop { f.tunnel.buffered(.firstToSecond) } == 0)
    }

    @Test func halfClosePassesOnAndBothEndsCloseTheTunnel() throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(Self.send(f.browser, Array("last words".utf8)) == 10)
        shutdown(f.browser, Int32(SHUT_WR))
        #expect(Self.readToEOF(f.upstream) == Array("earlylast words".utf8))
        #expect(!f.isClosed)
        #expect(Self.send(f.upstream, Array("reply".utf8)) == 5)
        shutdown(f.upstream, Int32(SHUT_WR))
        #expect(Self.readToEOF(f.browser) == Array("reply".utf8))
        let deadline = EventLoop.monotonicNow() + 10_000_000_000
        while !f.isClosed && EventLoop.monotonicNow() < deadline { usleep(1_000) }
        #expect(f.isClosed)
    }

    @Test func closeSendsFinalBytesToEachSide() throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(Self.read(f.upstream, count: 5) == Array("early".utf8))
        f.onLoop { f.tunnel.close(sendingToFirst: [1, 2], sendingToSecond: [3]) }
        #expect(Self.readToEOF(f.browser) == [1, 2])
        #expect(Self.readToEOF(f.upstream) == [3])
        #expect(f.isClosed)
    }
}

/// A thread for a blocking writer (the cooperative pool must not block in `send`).
final class Thread: @unchecked Sendable {
    private var thread = pthread_t()
    init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(body))
        pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box.toOpaque())
    }
    func join() { pthread_join(thread, nil) }
    private final class Box { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
}

/// A one-shot semaphore over a mutex and polling (no Dispatch in this target's imports).
final class DispatchSemaphoreLite: Sendable {
    private let done = Atomic<Bool>(false)
    func signal() { done.store(true, ordering: .releasing) }
    func wait() { while !done.load(ordering: .acquiring) { usleep(200) } }
}
