#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EventLoops
import HTTP1

/// A blocking client socket with an HTTP/1.1 response reader; `RawClient` runs one on its own queue,
/// `RawHTTPClient` on its own thread. Never used from two threads at once.
public final class BlockingSocket: @unchecked Sendable {
    public let fd: Int32
    /// Bytes received but not yet consumed by `readResponse` (pipelined answers).
    public private(set) var pending: [UInt8] = []
    public private(set) var sawEOF = false

    /// Connects to `host:port`. `receiveBuffer` sets SO_RCVBUF before connecting (back-pressure tests);
    /// a send blocked for `sendTimeout` seconds fails.
    public init(port: Int, host: String = "127.0.0.1", receiveBuffer: Int32? = nil, sendTimeout: Int = 5) throws {
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
        var timeout = timeval(tv_sec: sendTimeout, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    private var closed = false

    deinit { close() }

    /// Closes the socket now (unread received data makes the kernel send a reset).
    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    public func send(_ bytes: [UInt8]) throws {
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

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Closes the sending direction (the server sees EOF after what was sent).
    public func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Waits up to `timeout` for bytes and appends one `recv` worth to `pending`.
    /// Returns the bytes read: empty at EOF or on reset (then `sawEOF`), nil on timeout.
    @discardableResult
    public func receiveOnce(timeout: Double, maximum: Int = 64 * 1024) throws -> [UInt8]? {
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
    public func waitForClose(timeout: Double) throws -> Bool {
        let deadline = BlockingSocket.now() + timeout
        while !sawEOF {
            let left = deadline - BlockingSocket.now()
            if left <= 0 { return false }
            _ = try receiveOnce(timeout: left)
        }
        return true
    }

    /// Reads one complete response (head and body by its framing), leaving any further bytes pending.
    /// `100 Continue` heads are returned like final ones when `skipInterim` is false.
    ///
    /// `timeout` bounds the whole response, or with `timeoutIsIdle` each wait for bytes (long streams).
    /// `onBodyPiece` sees the body as it arrives; with `collectBody` false it is not kept.
    public func readResponse(method: String = "GET", timeout: Double = 5, skipInterim: Bool = true,
                             timeoutIsIdle: Bool = false, collectBody: Bool = true,
                             onBodyPiece: (([UInt8]) -> Void)? = nil) throws -> RawResponse {
        var deadline = Deadline(seconds: timeout, idle: timeoutIsIdle)
        while true {
            var parser = ResponseHeadParser()
            var parsed: (HTTPResponseHead, Int)?
            while parsed == nil {
                let result = try pending.withUnsafeBytes { raw in try parser.parse(raw) }
                if case .complete(let head, let consumed) = result { parsed = (head, consumed); break }
                parser.reset()
                try fill(&deadline, what: "response head")
            }
            guard let (head, consumed) = parsed else { throw RawClientError(what: "unreachable") }
            pending.removeFirst(consumed)
            if (100...199).contains(head.status) {
                if skipInterim { continue }
                return RawResponse(status: head.status, headers: head.headers, body: [])
            }
            let framing = try BodyFramingRules.response(head, requestMethod: method, version: parser.lastVersion)
            var body: [UInt8] = []
            try readBody(framing, deadline: &deadline) { piece in
                guard !piece.isEmpty else { return }
                onBodyPiece?(piece)
                if collectBody { body += piece }
            }
            return RawResponse(status: head.status, headers: head.headers, body: body)
        }
    }

    private func readBody(_ framing: BodyFraming, deadline: inout Deadline, deliver: ([UInt8]) -> Void) throws {
        switch framing {
        case .none:
            return
        case .contentLength(let n):
            var remaining = n
            while true {
                let take = min(remaining, pending.count)
                if take > 0 {
                    deliver(Array(pending[0..<take]))
                    pending.removeFirst(take)
                    remaining -= take
                }
                if remaining == 0 { return }
                try fill(&deadline, what: "body of \(n) bytes")
            }
        case .chunked:
            var decoder = ChunkedDecoder()
            while true {
                var piece: [UInt8] = []
                let consumed = try pending.withUnsafeBytes { raw in
                    try decoder.decode(raw) { piece.append(contentsOf: $0) }
                }
                pending.removeFirst(consumed)
                deliver(piece)
                if decoder.isComplete { return }
                try fill(&deadline, what: "chunked body")
            }
        case .untilClose:
            while true {
                deliver(pending)
                pending.removeAll()
                if sawEOF { return }
                try fill(&deadline, what: "close-delimited body")
            }
        }
    }

    /// A total deadline, or one that restarts whenever bytes arrive.
    private struct Deadline {
        let seconds: Double
        let idle: Bool
        var at: Double

        init(seconds: Double, idle: Bool) {
            self.seconds = seconds
            self.idle = idle
            at = BlockingSocket.now() + seconds
        }
    }

    private func fill(_ deadline: inout Deadline, what: String) throws {
        if sawEOF { throw RawClientError(what: "connection closed while reading \(what)") }
        let left = deadline.at - BlockingSocket.now()
        guard left > 0, try receiveOnce(timeout: left) != nil else {
            throw RawClientError(what: "timed out reading \(what)")
        }
        if deadline.idle { deadline.at = BlockingSocket.now() + deadline.seconds }
    }

    /// Monotonic seconds.
    static func now() -> Double { Double(EventLoop.monotonicNow()) / 1e9 }
}
