import CCurl
#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1

/// A `wss://` upstream connection: libcurl connects and does the TLS handshake
/// (`CURLOPT_CONNECT_ONLY`, certificate checked against the system CA bundle like every https call,
/// parsed once for all tunnels: `CurlTrust`),
/// then the caller's event loop drives it with `curl_easy_send`/`curl_easy_recv` on its socket:
/// first the HTTP/1.1 handshake, then, as a `TunnelEndpoint`, the WebSocket's bytes.
///
/// `curl_easy_perform` blocks until the connection is up, so it runs on a short-lived thread of its
/// own (never on a loop, never on the cooperative pool); from then on only the loop touches the
/// handle. The connection is never shared or cached: `close` cleans the handle up with it.
final class CurlTunnel: TunnelEndpoint, EventLoopSelectable {
    private let handle: UnsafeMutableRawPointer
    let fd: Int32
    let loop: EventLoop
    /// Bytes received behind the `101` head (the upstream's first frames).
    private var leftover: [UInt8] = []
    private var leftoverOffset = 0
    private weak var handler: (any TunnelEndpointHandler)?
    private var closed = false
    /// While the handshake runs, readiness resumes this instead of going to the handler.
    private var waiter: UnsafeContinuation<Bool, Never>?
    private var timer: TimerID?

    private init(handle: UnsafeMutableRawPointer, fd: Int32, loop: EventLoop) {
        self.handle = handle
        self.fd = fd
        self.loop = loop
    }

    private struct Handle: @unchecked Sendable { let pointer: UnsafeMutableRawPointer }

    /// Connects to `host:port` over TLS and registers the socket with `loop` (the caller's).
    static func open(host: String, port: Int, connectTimeoutMilliseconds: Int,
                     loop: EventLoop) async throws(UpstreamError) -> CurlTunnel {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let url = "https://\(hostPart):\(port)/"
        let connected: Result<Handle, UpstreamError> = await withUnsafeContinuation { continuation in
            let started = DetachedThread.start(name: "gatehouse-wss-connect") {
                continuation.resume(returning: Self.connect(url: url, timeoutMilliseconds: connectTimeoutMilliseconds))
            }
            if !started { continuation.resume(returning: .failure(.connectFailed("no thread for the TLS connect"))) }
        }
        await loop.hop()
        let handle = try connected.get().pointer
        var socket: curl_socket_t = -1
        guard gatehouse_curl_easy_getinfo_socket(handle, &socket) == CURLE_OK, socket >= 0 else {
            curl_easy_cleanup(handle)
            throw .connectFailed("libcurl gave no socket for the TLS connection")
        }
        let tunnel = CurlTunnel(handle: handle, fd: socket, loop: loop)
        do { try loop.register(socket, tunnel) } catch {
            curl_easy_cleanup(handle)
            throw .connectFailed("\(error)")
        }
        return tunnel
    }

    /// On the connect thread: a handle that only connects (TCP + TLS), then stops.
    private static func connect(url: String, timeoutMilliseconds: Int) -> Result<Handle, UpstreamError> {
        guard globalInitialised, let handle = curl_easy_init() else {
            return .failure(.connectFailed("libcurl could not be initialised"))
        }
        guard let trusted = SharedCAStore.current() else {
            curl_easy_cleanup(handle)
            return .failure(.connectFailed("the system CA bundle could not be read"))
        }
        let options: [CURLcode] = [
            gatehouse_curl_easy_setopt_string(handle, CURLOPT_URL, url),
            gatehouse_curl_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "https"),
            gatehouse_curl_easy_setopt_string(handle, CURLOPT_PROXY, ""),
            gatehouse_curl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1),
            gatehouse_curl_easy_setopt_long(handle, CURLOPT_CONNECT_ONLY, 1),
            gatehouse_curl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, timeoutMilliseconds),
            CurlTrust.apply(to: handle, sharing: trusted),
        ]
        guard options.allSatisfy({ $0 == CURLE_OK }) else {
            curl_easy_cleanup(handle)
            return .failure(.invalidRequest("libcurl refused a connect-only option"))
        }
        // The connection's SSL_CTX took its own reference to the store during the handshake.
        let code = withExtendedLifetime(trusted) { curl_easy_perform(handle) }
        guard code == CURLE_OK else {
            curl_easy_cleanup(handle)
            if code == CURLE_OPERATION_TIMEDOUT { return .failure(.connectTimeout) }
            return .failure(.connectFailed(String(cString: curl_easy_strerror(code))))
        }
        return .success(Handle(pointer: handle))
    }

    // MARK: The handshake (on the loop)

    /// Writes all of `bytes`, waiting for the socket; false when the deadline passed or it broke.
    func writeAll(_ bytes: [UInt8], deadline: UInt64) async -> Bool {
        var offset = 0
        while offset < bytes.count {
            switch bytes.withUnsafeBytes({ sendSome(UnsafeRawBufferPointer(rebasing: $0[offset...])) }) {
            case .bytes(let n): offset += n
            case .wouldBlock: guard await waitForReadiness(deadline: deadline) else { return false }
            case .closed: return false
            }
        }
        return true
    }

    /// Reads the final answer head (interim 1xx skipped, a `101` returned); what follows it stays
    /// for `receive` (a `101`'s first frames) or `readBody`.
    func readFinalHead(deadline: UInt64) async throws(UpstreamError) -> (HTTPResponseHead, HTTPVersion) {
        var parser = ResponseHeadParser()
        var buffer: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            if !buffer.isEmpty {
                let result: HeadParseResult<HTTPResponseHead>
                do { result = try buffer.withUnsafeBytes { try parser.parse($0) } } catch {
                    throw .invalidResponse("\(error)")
                }
                if case .complete(let head, let consumed) = result {
                    buffer.removeFirst(consumed)
                    let version = parser.lastVersion
                    parser.reset()
                    if (100..<200).contains(head.status) && head.status != 101 { continue }
                    leftover = buffer
                    return (head, version)
                }
            }
            switch scratch.withUnsafeMutableBytes({ receiveFromTLS(into: $0) }) {
            case .bytes(let n): buffer += scratch[0..<n]
            case .wouldBlock:
                guard await waitForReadiness(deadline: deadline) else {
                    throw closed ? .connectionClosed : .firstByteTimeout
                }
            case .closed: throw buffer.isEmpty ? .connectionClosed : .invalidResponse("truncated head")
            }
        }
    }

    /// The body of a refused switch, read whole (such answers are short): at most `limit` bytes,
    /// framed as `framing` says.
    func readBody(_ framing: BodyFraming, limit: Int, deadline: UInt64) async throws(UpstreamError) -> [UInt8] {
        var body: [UInt8] = []
        var decoder = ChunkedDecoder()
        var pending = leftover
        leftover = []
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            switch framing {
            case .none:
                return []
            case .contentLength(let length):
                guard length <= limit else { throw .invalidResponse("refusal body over \(limit) bytes") }
                body += pending.prefix(length - body.count)
                if body.count == length { return body }
            case .chunked:
                do {
                    _ = try pending.withUnsafeBytes { try decoder.decode($0) { body.append(contentsOf: $0) } }
                } catch { throw .invalidResponse("\(error)") }
                if decoder.isComplete { return body }
            case .untilClose:
                body += pending
            }
            pending = []
            guard body.count <= limit else { throw .invalidResponse("refusal body over \(limit) bytes") }
            switch scratch.withUnsafeMutableBytes({ receiveFromTLS(into: $0) }) {
            case .bytes(let n): pending = Array(scratch[0..<n])
            case .wouldBlock:
                guard await waitForReadiness(deadline: deadline) else { throw .bodyTimeout }
            case .closed:
                if framing == .untilClose { return body }
                throw .connectionClosed
            }
        }
    }

    private func waitForReadiness(deadline: UInt64) async -> Bool {
        if closed { return false }
        let now = EventLoop.monotonicNow()
        guard now < deadline else { return false }
        return await withUnsafeContinuation { continuation in
            waiter = continuation
            timer = loop.scheduleTimer(afterNanoseconds: deadline - now) { [weak self] in
                self?.timer = nil
                self?.resumeWaiter(false)
            }
        }
    }

    private func resumeWaiter(_ value: Bool) {
        guard let waiter else { return }
        self.waiter = nil
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        waiter.resume(returning: value)
    }

    // MARK: TunnelEndpoint

    func attach(_ handler: any TunnelEndpointHandler) {
        self.handler = handler
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer) -> TunnelIO {
        if closed { return .closed }
        if leftoverOffset < leftover.count {
            let n = min(buffer.count, leftover.count - leftoverOffset)
            leftover.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + leftoverOffset, byteCount: n) }
            leftoverOffset += n
            if leftoverOffset == leftover.count { leftover = []; leftoverOffset = 0 }
            return .bytes(n)
        }
        return receiveFromTLS(into: buffer)
    }

    /// libcurl (OpenSSL) may hold decrypted bytes the socket no longer shows: callers read until
    /// `.wouldBlock` before they wait, which the tunnel does.
    private func receiveFromTLS(into buffer: UnsafeMutableRawBufferPointer) -> TunnelIO {
        if closed { return .closed }
        var received = 0
        return Self.outcome(curl_easy_recv(handle, buffer.baseAddress, buffer.count, &received), moved: received)
    }

    func send(_ bytes: UnsafeRawBufferPointer) -> TunnelIO {
        if bytes.isEmpty { return .bytes(0) }
        return sendSome(bytes)
    }

    private func sendSome(_ bytes: UnsafeRawBufferPointer) -> TunnelIO {
        if closed { return .closed }
        var sent = 0
        return Self.outcome(curl_easy_send(handle, bytes.baseAddress, bytes.count, &sent), moved: sent)
    }

    /// `CURLE_AGAIN`: wait for readiness; `CURLE_OK` with nothing moved (an orderly close) or any
    /// error: the connection is over.
    private static func outcome(_ code: CURLcode, moved: Int) -> TunnelIO {
        if code == CURLE_AGAIN { return .wouldBlock }
        return code == CURLE_OK && moved > 0 ? .bytes(moved) : .closed
    }

    /// TLS has no half-close the tunnel could rely on: the tunnel closes the whole connection.
    func shutdownOutput() -> Bool { false }

    func close() {
        guard !closed else { return }
        closed = true
        handler = nil
        loop.deregister(fd)
        resumeWaiter(false)
        // Closes the socket (with a TLS close_notify) and frees the handle.
        curl_easy_cleanup(handle)
    }

    // MARK: EventLoopSelectable

    func socketReadable() {
        if waiter != nil { resumeWaiter(true) } else { handler?.endpointReadable(self) }
    }

    func socketWritable() {
        if waiter != nil { resumeWaiter(true) } else { handler?.endpointWritable(self) }
    }

    func socketHangup() {
        if waiter != nil { return resumeWaiter(true) }
        handler?.endpointReadable(self)
        if !closed { handler?.endpointEnded(self, graceful: false) }
    }
}

/// libcurl's global set-up, once per process (a Swift global is initialised exactly once, whatever
/// thread gets there first).
private let globalInitialised = curl_global_init(gatehouse_curl_global_default()) == CURLE_OK

extension HTTPSUpstreamClient: UpstreamSwitchingTransport {
    /// A protocol switch (`wss://`) on a new TLS connection of its own (`CurlTunnel`), never one
    /// of the client's cached connections. A refusal's body is read whole (up to 64 KiB) and the
    /// connection closed.
    public func switchProtocols(_ request: UpstreamRequest) async throws(UpstreamError) -> UpstreamSwitch {
        try await switchProtocols(request, timeouts: Timeouts())
    }

    public func switchProtocols(_ request: UpstreamRequest, timeouts: Timeouts) async throws(UpstreamError) -> UpstreamSwitch {
        guard let loop = EventLoop.current else { throw .connectFailed("not on an event loop") }
        let tunnel = try await CurlTunnel.open(host: request.host, port: request.port,
                                               connectTimeoutMilliseconds: Int(min(timeouts.connectNanoseconds / 1_000_000, UInt64(Int32.max))),
                                               loop: loop)
        do throws(UpstreamError) {
            let deadline = EventLoop.monotonicNow() &+ timeouts.firstByteNanoseconds
            var head = request
            // `Host` as libcurl would send it for https: no port when it is 443.
            if request.port == 443 { head.port = 80 }
            guard await tunnel.writeAll(head.encodedHead(bodyFraming: nil), deadline: deadline) else {
                throw .connectionClosed
            }
            let (answer, version) = try await tunnel.readFinalHead(deadline: deadline)
            if answer.status == 101 { return .switched(answer, tunnel) }
            let framing = try UpstreamResponseFraming(answer, requestMethod: request.method, version: version)
            let body = try await tunnel.readBody(framing.framing, limit: 64 * 1024, deadline: deadline)
            tunnel.close()
            return .answered(BufferedUpstreamAnswer(head: answer, framing: framing, body: body))
        } catch {
            tunnel.close()
            throw error
        }
    }
}

/// An answer read whole before it is relayed.
final class BufferedUpstreamAnswer: UpstreamAnswer, @unchecked Sendable {
    let head: HTTPResponseHead
    let framing: UpstreamResponseFraming
    private var body: [UInt8]?

    init(head: HTTPResponseHead, framing: UpstreamResponseFraming, body: [UInt8]) {
        self.head = head
        self.framing = framing
        self.body = body
    }

    func wholeBodyIfBuffered() -> [UInt8]? {
        defer { body = nil }
        return body
    }

    func nextBodyPiece() async throws(UpstreamError) -> [UInt8]? {
        defer { body = nil }
        return body
    }

    func discard() { body = nil }
}
