#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Testing
@testable import EventLoops
@testable import HTTP1

/// What a test client failed at. Tests report it through `#expect(throws:)` or let it fail the test.
struct RawClientError: Error, CustomStringConvertible {
    var what: String
    var errno: Int32 = 0
    var description: String { errno == 0 ? what : "\(what) (errno \(errno))" }
}

/// One response as it arrived on the wire.
struct RawResponse: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]
    var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// A test client over a raw POSIX socket. Every wait is bounded by a deadline, so a server bug shows
/// up as a failed expectation rather than a hung suite.
///
/// The socket calls block, so they run on the client's own dispatch queue: blocking the
/// cooperative pool (one thread per core) would stall the other tests' tasks and the server's
/// shutdown task, and turn timing checks into noise.
final class RawClient: @unchecked Sendable {
    private let socket: BlockingSocket
    private let queue = DispatchQueue(label: "test.raw-client")

    init(port: Int, host: String = "127.0.0.1", receiveBuffer: Int32? = nil) async throws {
        let queue = self.queue
        socket = try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try BlockingSocket(port: port, host: host, receiveBuffer: receiveBuffer) })
            }
        }
    }

    var fd: Int32 { socket.fd }
    var pending: [UInt8] { socket.pending }
    var sawEOF: Bool { socket.sawEOF }

    private func run<T: Sendable>(_ body: @escaping @Sendable (BlockingSocket) throws -> T) async throws -> T {
        let socket = self.socket
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body(socket) }) }
        }
    }

    func send(_ bytes: [UInt8]) async throws { try await run { try $0.send(bytes) } }
    func send(_ text: String) async throws { try await send(Array(text.utf8)) }
    func shutdownWrite() { socket.shutdownWrite() }
    func close() { socket.close() }

    @discardableResult
    func receiveOnce(timeout: Double, maximum: Int = 64 * 1024) async throws -> [UInt8]? {
        try await run { try $0.receiveOnce(timeout: timeout, maximum: maximum) }
    }

    func waitForClose(timeout: Double) async throws -> Bool {
        try await run { try $0.waitForClose(timeout: timeout) }
    }

    func readResponse(method: String = "GET", timeout: Double = 5, skipInterim: Bool = true) async throws -> RawResponse {
        try await run { try $0.readResponse(method: method, timeout: timeout, skipInterim: skipInterim) }
    }
}

/// The blocking socket behind `RawClient`; only ever used from that client's queue.
final class BlockingSocket: @unchecked Sendable {
    let fd: Int32
    /// Bytes received but not yet consumed by `readResponse` (pipelined answers).
    private(set) var pending: [UInt8] = []
    private(set) var sawEOF = false

    /// Connects to `host:port`. `receiveBuffer` sets SO_RCVBUF before connecting (back-pressure tests).
    init(port: Int, host: String = "127.0.0.1", receiveBuffer: Int32? = nil) throws {
        guard let address = SocketAddress(ip: host, port: port) else { throw RawClientError(what: "bad address \(host)") }
        fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RawClientError(what: "socket", errno: errno) }
        if let receiveBuffer { Sockets.setOption(fd, level: SOL_SOCKET, name: SO_RCVBUF, value: receiveBuffer) }
        var storage = address.storage
        let rc = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
        }
        guard rc == 0 else {
            let err = errno
            // A class whose properties are all set runs deinit when init throws: close only there.
            throw RawClientError(what: "connect \(host):\(port)", errno: err)
        }
        // Sends in tests are small; a blocked send must not hang the suite either.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    private var closed = false

    deinit { close() }

    /// Closes the socket now (unread received data makes the kernel send a reset).
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RawClientError(what: "send", errno: errno)
            }
            offset += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Closes the sending direction (the server sees EOF after what was sent).
    func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Waits up to `timeout` for bytes and appends one `recv` worth to `pending`.
    /// Returns the bytes read: empty at EOF or on reset (then `sawEOF`), nil on timeout.
    @discardableResult
    func receiveOnce(timeout: Double, maximum: Int = 64 * 1024) throws -> [UInt8]? {
        guard !sawEOF else { return [] }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, Int32(max(0, timeout * 1000)))
        if ready == 0 { return nil }
        if ready < 0 { throw RawClientError(what: "poll", errno: errno) }
        var buffer = [UInt8](repeating: 0, count: maximum)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
        if n <= 0 {
            // A reset after the server's answer counts as the end of the connection too.
            if n < 0 && errno != ECONNRESET { throw RawClientError(what: "recv", errno: errno) }
            sawEOF = true
            return []
        }
        let got = Array(buffer[0..<n])
        pending.append(contentsOf: got)
        return got
    }

    /// Reads until the server closes. Returns true if it did within `timeout`.
    func waitForClose(timeout: Double) throws -> Bool {
        let deadline = now() + timeout
        while !sawEOF {
            let left = deadline - now()
            if left <= 0 { return false }
            _ = try receiveOnce(timeout: left)
        }
        return true
    }

    /// Reads one complete response (head and body by its framing), leaving any further bytes pending.
    /// `100 Continue` heads are returned like final ones when `skipInterim` is false.
    func readResponse(method: String = "GET", timeout: Double = 5, skipInterim: Bool = true) throws -> RawResponse {
        let deadline = now() + timeout
        while true {
            var parser = ResponseHeadParser()
            var parsed: (HTTPResponseHead, Int)?
            while parsed == nil {
                let result = try pending.withUnsafeBytes { raw in try parser.parse(raw) }
                if case .complete(let head, let consumed) = result { parsed = (head, consumed); break }
                parser.reset()
                try fill(deadline: deadline, what: "response head")
            }
            guard let (head, consumed) = parsed else { throw RawClientError(what: "unreachable") }
            pending.removeFirst(consumed)
            if (100...199).contains(head.status) {
                if skipInterim { continue }
                return RawResponse(status: head.status, headers: head.headers, body: [])
            }
            let framing = try BodyFramingRules.response(head, requestMethod: method, version: parser.lastVersion)
            let body = try readBody(framing, deadline: deadline)
            return RawResponse(status: head.status, headers: head.headers, body: body)
        }
    }

    private func readBody(_ framing: BodyFraming, deadline: Double) throws -> [UInt8] {
        switch framing {
        case .none:
            return []
        case .contentLength(let n):
            while pending.count < n { try fill(deadline: deadline, what: "body of \(n) bytes") }
            let body = Array(pending[0..<n])
            pending.removeFirst(n)
            return body
        case .chunked:
            var decoder = ChunkedDecoder()
            var body: [UInt8] = []
            while true {
                let consumed = try pending.withUnsafeBytes { raw in
                    try decoder.decode(raw) { body.append(contentsOf: $0) }
                }
                pending.removeFirst(consumed)
                if decoder.isComplete { return body }
                try fill(deadline: deadline, what: "chunked body")
            }
        case .untilClose:
            while !sawEOF { try fill(deadline: deadline, what: "close-delimited body") }
            defer { pending.removeAll() }
            return pending
        }
    }

    private func fill(deadline: Double, what: String) throws {
        if sawEOF { throw RawClientError(what: "connection closed while reading \(what)") }
        let left = deadline - now()
        guard left > 0, try receiveOnce(timeout: left) != nil else {
            throw RawClientError(what: "timed out reading \(what)")
        }
    }
}

/// Monotonic seconds.
func now() -> Double { Double(EventLoop.monotonicNow()) / 1e9 }

/// Polls `condition` every 10 ms until it holds or `timeout` passes.
func eventually(timeout: Double = 3, _ condition: () -> Bool) async -> Bool {
    let deadline = now() + timeout
    while now() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return condition()
}
