#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1
@testable import HTTPClient
import Synchronization
import Testing

/// `UpstreamClient.sendOnLoop` and `UpstreamCall`: a request sent from the loop without a task, its
/// answer taken from the readiness callback when it came whole, else finished in a task exactly as
/// `send` would (the same answer, retry, timeout), against a scripted upstream on a real socket.
@Suite("UpstreamCall: an exchange begun on the loop")
struct UpstreamCallTests {
    @Test("a whole answer is taken in the callback, on the pooled connection")
    func wholeAnswer() async throws {
        let upstream = try ScriptedUpstream { connection, _ in
            while connection.readRequest() != nil { connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") }
        }
        let outcome = await CallLoop.exchange(upstream) { _ in }
        #expect(outcome == .inCallback(200, "ok"))
        #expect(upstream.connections == 1)
        #expect(upstream.requests == 2)
    }

    @Test("what a caller keeps with a connection comes back with its next answer, not with another connection's")
    func connectionMemo() async throws {
        let upstream = try ScriptedUpstream { connection, _ in
            while connection.readRequest() != nil { connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") }
        }
        let port = upstream.port
        final class Memo {}
        let same = await CallLoop.run { loop in
            let client = UpstreamClient()
            do throws(UpstreamError) {
                let first = try await client.send(CallLoop.request(port: port), body: nil)
                let kept = first.connectionMemo { Memo() }
                _ = first.wholeBodyIfBuffered()  // the connection goes back to the pool
                let second = try await client.send(CallLoop.request(port: port), body: nil)
                let again = second.connectionMemo { Memo() }
                _ = second.wholeBodyIfBuffered()
                // Another client: another connection, another memo.
                let other = try await UpstreamClient().send(CallLoop.request(port: port), body: nil)
                let elsewhere = other.connectionMemo { Memo() }
                _ = other.wholeBodyIfBuffered()
                return kept != nil && kept === again && elsewhere !== kept
            } catch {
                return false
            }
        }
        #expect(same)
        #expect(upstream.connections == 2)
    }

    @Test("no idle pooled connection, or a TLS client: nothing is sent, `send` does the exchange")
    func declined() async throws {
        let upstream = try ScriptedUpstream { connection, _ in
            while connection.readRequest() != nil { connection.write("HTTP/1.1 204 No Content\r\n\r\n") }
        }
        let port = upstream.port
        let declined = await CallLoop.run { loop in
            let request = CallLoop.request(port: port)
            return (UpstreamClient().sendOnLoop(request, loop: loop).call == nil,
                    UpstreamClient(usesTLS: true).sendOnLoop(request, loop: loop).call == nil)
        }
        #expect(declined == (true, true))
        #expect(upstream.requests == 0)
    }

    @Test("a head that arrives in pieces is read on in a task")
    func headInPieces() async throws {
        let upstream = try ScriptedUpstream { connection, number in
            while connection.readRequest() != nil {
                if number == 0 && connection.served == 2 {
                    connection.write("HTTP/1.1 200 OK\r\nConte")
                    usleep(150_000)
                    connection.write("nt-Length: 5\r\n\r\nlater")
                } else {
                    connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                }
            }
        }
        let outcome = await CallLoop.exchange(upstream) { _ in }
        #expect(outcome == .inTask(200, "later"))
        #expect(upstream.connections == 1)
    }

    @Test("an interim 1xx answer is skipped in the task")
    func interimAnswer() async throws {
        let upstream = try ScriptedUpstream.answering(
            second: "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(await CallLoop.exchange(upstream) { _ in } == .inTask(200, "ok"))
    }

    @Test("a pooled connection the upstream closes unanswered: a GET is sent once more on a new one")
    func staleConnectionRetried() async throws {
        let upstream = try ScriptedUpstream { connection, number in
            while connection.readRequest() != nil {
                if number == 0 && connection.served == 2 { return }  // read, then closed without an answer
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            }
        }
        #expect(await CallLoop.exchange(upstream) { _ in } == .inTask(200, "ok"))
        #expect(upstream.connections == 2)
        #expect(upstream.requests == 3)
    }

    @Test("a bodiless POST the upstream read is never sent twice: 502's error")
    func unsafeNotReplayed() async throws {
        let upstream = try ScriptedUpstream { connection, number in
            while connection.readRequest() != nil {
                if number == 0 && connection.served == 2 { return }
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            }
        }
        let outcome = await CallLoop.exchange(upstream, method: "POST") { _ in }
        #expect(outcome == .failed(.connectionClosed))
        #expect(upstream.requests == 2)
    }

    @Test("silence past the first-byte timeout: the callback comes, the task reports the timeout")
    func firstByteTimeout() async throws {
        // The second request is never answered: the timeout is the only way the exchange can end,
        // whatever the machine's load (the outcome is asserted, not how long it took).
        let upstream = try ScriptedUpstream { connection, _ in
            while connection.readRequest() != nil {
                if connection.served == 2 { _ = connection.readRequest(); return }  // waits for the gateway to give up
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            }
        }
        let outcome = await CallLoop.exchange(upstream) { timeouts in timeouts.firstByteNanoseconds = 1_000_000_000 }
        #expect(outcome == .failed(.firstByteTimeout))
    }

    @Test("an upstream dropped before its accepting thread ran never answers the next upstream's connections")
    func droppedUpstreamStaysSilent() async throws {
        // The fixture itself: a test that ends at once (no connection) drops its upstream before the
        // accepting thread may have called `accept`; had the listener's descriptor been closed then,
        // the next listener would get its number and that thread would answer its connections.
        for _ in 0..<20 {
            _ = try ScriptedUpstream { connection, _ in
                while connection.readRequest() != nil { connection.write("HTTP/1.1 204 No Content\r\n\r\n") }
            }
            let upstream = try ScriptedUpstream { connection, _ in
                while connection.readRequest() != nil { connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") }
            }
            #expect(await CallLoop.exchange(upstream) { _ in } == .inCallback(200, "ok"))
        }
    }

    @Test("a malformed head is refused in the task, as `send` refuses it")
    func malformedHead() async throws {
        let upstream = try ScriptedUpstream.answering(second: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok")
        guard case .failed(.invalidResponse) = await CallLoop.exchange(upstream, { _ in }) else {
            Issue.record("a conflicting Content-Length was accepted")
            return
        }
    }
}

/// What the receiver saw.
enum CallOutcome: Equatable, Sendable {
    case inCallback(Int, String)
    case inTask(Int, String)
    case failed(UpstreamError)
    case notSent
}

/// A loop of the tests' own, and one exchange run on it: a first request through `send` (which
/// leaves its connection in the pool), then one through `sendOnLoop`.
enum CallLoop {
    static let loop: EventLoop = {
        // A test fixture: without a loop no scenario could run at all.
        let loop = try! EventLoop(index: 94, threadName: "call-test-loop")
        loop.start()
        return loop
    }()

    static func run<Value: Sendable>(_ body: @escaping @Sendable (EventLoop) async -> Value) async -> Value {
        await Task(executorPreference: loop) {
            await loop.hop()
            return await body(loop)
        }.value
    }

    static func request(port: Int, method: String = "GET") -> UpstreamRequest {
        UpstreamRequest(host: "127.0.0.1", port: port, method: method, target: "/call", headers: ["Accept": "*/*"])
    }

    /// The exchange against `upstream`, which is kept alive (its listener holding its port) until
    /// the exchange is over: Swift may release an object after its last use — here reading `port` —
    /// and its port could then go to another test's server running beside.
    static func exchange(_ upstream: ScriptedUpstream, method: String = "GET",
                         _ configure: @Sendable (inout UpstreamTimeouts) -> Void) async -> CallOutcome {
        let port = upstream.port
        var timeouts = UpstreamTimeouts()
        configure(&timeouts)
        let client = UpstreamClient(timeouts: timeouts)
        let outcome = await run { loop -> CallOutcome in
            do throws(UpstreamError) {
                let first = try await client.send(request(port: port), body: nil)
                _ = first.wholeBodyIfBuffered()
            } catch {
                return .failed(error)
            }
            guard let call = client.sendOnLoop(request(port: port, method: method), loop: loop).call else { return .notSent }
            return await withCheckedContinuation { continuation in
                RecordingReceiver(call: call, loop: loop, continuation: continuation).start()
            }
        }
        withExtendedLifetime(upstream) {}
        return outcome
    }
}

/// Takes the answer in the callback when it can, else finishes the call in a task on the loop.
final class RecordingReceiver: UpstreamCallReceiver, @unchecked Sendable {
    let call: UpstreamCall
    let loop: EventLoop
    let continuation: CheckedContinuation<CallOutcome, Never>

    init(call: UpstreamCall, loop: EventLoop, continuation: CheckedContinuation<CallOutcome, Never>) {
        self.call = call
        self.loop = loop
        self.continuation = continuation
    }

    func start() { call.notify(self) }

    func upstreamAnswered() {
        #expect(loop.inEventLoop)
        if let answer = call.headIfArrived() {
            let body = answer.wholeBodyIfBuffered() ?? []
            return continuation.resume(returning: .inCallback(answer.head.status, String(decoding: body, as: UTF8.self)))
        }
        let (call, continuation) = (self.call, self.continuation)
        Task(executorPreference: loop) {
            do throws(UpstreamError) {
                let answer = try await call.finish()
                var body: [UInt8] = []
                while let piece = try await answer.nextBodyPiece() { body += piece }
                continuation.resume(returning: .inTask(answer.head.status, String(decoding: body, as: UTF8.self)))
            } catch {
                continuation.resume(returning: .failed(error))
            }
        }
    }
}

/// A plain-TCP upstream on a blocking thread per connection, each running `script` (given the
/// connection and its number, from 0). Counts connections and requests.
final class ScriptedUpstream: @unchecked Sendable {
    final class Connection: @unchecked Sendable {
        let fd: Int32
        private var buffer: [UInt8] = []
        private let counts: Counts
        /// Requests read so far on this connection.
        private(set) var served = 0

        init(fd: Int32, counts: Counts) {
            self.fd = fd
            self.counts = counts
        }

        /// The next request head (these requests have no body); nil at EOF.
        func readRequest() -> String? {
            while true {
                if let end = buffer.indices.dropLast(3).first(where: { buffer[$0...].starts(with: Array("\r\n\r\n".utf8)) }) {
                    let head = String(decoding: buffer[..<end], as: UTF8.self)
                    buffer.removeFirst(end + 4)
                    served += 1
                    counts.requests.add(1, ordering: .relaxed)
                    return head
                }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 4096, 0) }
                if n <= 0 { return nil }
                buffer += chunk[..<n]
            }
        }

        func write(_ text: String) {
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }

    final class Counts: Sendable {
        let requests = Atomic<Int>(0)
        let connections = Atomic<Int>(0)
    }

    let port: Int
    private let fd: Int32
    private let counts = Counts()
    var requests: Int { counts.requests.load(ordering: .relaxed) }
    var connections: Int { counts.connections.load(ordering: .relaxed) }

    init(_ script: @escaping @Sendable (Connection, Int) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            throw SocketError(call: "bind/listen", errno: errno)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let (listener, counts) = (fd, counts)
        // The thread holds the counts, not the upstream: the listener is shut down in `deinit`, and
        // closed here, by the only thread that accepts on it, once it has stopped. Closed in
        // `deinit`, its descriptor number could be given to another test's new listener before this
        // thread's next `accept`, which would then take that test's connections and answer them with
        // this script (a `204` where the other test waited for a timeout).
        _ = DetachedThread.start(name: "scripted-upstream") {
            defer { Glibc.close(listener) }
            while true {
                let accepted = accept(listener, nil, nil)
                if accepted < 0 {
                    // Passing: a signal, a connection reset before it was taken, or every descriptor
                    // momentarily in use by the tests running beside. Anything else (the shutdown in
                    // `deinit`: EINVAL) ends the thread.
                    let code = errno
                    if code == EINTR || code == ECONNABORTED || code == EMFILE || code == ENFILE {
                        usleep(1_000)
                        continue
                    }
                    return
                }
                let number = counts.connections.add(1, ordering: .relaxed).oldValue
                let connection = Connection(fd: accepted, counts: counts)
                _ = DetachedThread.start(name: "scripted-upstream-\(number)") {
                    script(connection, number)
                    Glibc.close(accepted)
                }
            }
        }
    }

    /// An upstream that answers `ok` to every request but each connection's second, which gets `second`.
    static func answering(second: String) throws -> ScriptedUpstream {
        try ScriptedUpstream { connection, _ in
            while connection.readRequest() != nil {
                connection.write(connection.served == 2 ? second : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            }
        }
    }

    /// Wakes the accepting thread (its `accept` fails with `EINVAL`), which then closes the listener.
    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
    }
}
