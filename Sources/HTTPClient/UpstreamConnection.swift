#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1
import TLSTransport

/// One keep-alive connection to an upstream, confined to the event loop that opened it.
///
/// Every async method must be called from a task running on that loop (the proxy's handler task is);
/// readiness callbacks resume the waiting continuation directly on the loop.
final class UpstreamConnection: EventLoopSelectable, @unchecked Sendable {
    let fd: Int32
    let loop: EventLoop
    let key: UpstreamKey
    /// The `Host` line of every request sent on this connection (they all go to `key`'s host and
    /// port), written on its first request instead of on each.
    lazy var hostLine: [UInt8] = RequestHeadEncoder.hostLine(hostName: key.host,
                                                                          port: key.port == key.defaultPort ? nil : key.port)
    // `@exclusivity(unchecked)` on the per-request state below, `input` and the parser included: each
    // checked access is a runtime call on the proxy's hot path (callgrind, commit 539f757). Safe because
    // no access to one of them overlaps another access to it: single reads and assignments, `output`
    // read by `send`/`SSL_write` inside `withUnsafeBytes` (which call nothing back into this
    // object), and the waiter cleared before it is resumed (`resumeWaiter`), its task then running
    // later from the loop's queue; the read buffer is filled by `recv(2)` or by `fill`, whose closure
    // calls only the TLS session, and read and consumed in single statements, its bytes handed to
    // the head parser and chunked decoder, which call nothing back. Keep it so: an overlapping
    // access is no longer trapped.
    @exclusivity(unchecked) var input = ReadBuffer(capacity: 16 * 1024)
    @exclusivity(unchecked) var headParser = ResponseHeadParser()
    @exclusivity(unchecked) var output: [UInt8] = []
    @exclusivity(unchecked) var outputOffset = 0
    @exclusivity(unchecked) var readable = false
    @exclusivity(unchecked) var writable = false
    @exclusivity(unchecked) var peerClosed = false
    @exclusivity(unchecked) var closed = false
    @exclusivity(unchecked) var waiter: UnsafeContinuation<Bool, Never>?
    /// Who waits by callback instead (`notifyWhenReadable`): an exchange begun on the loop without a
    /// task (`UpstreamCall`). At most one of `waiter` and this is set.
    @exclusivity(unchecked) var callbackWaiter: (any UpstreamCallReceiver)?
    @exclusivity(unchecked) var waitingFor: Wait = .nothing
    @exclusivity(unchecked) var timer: TimerID?
    /// When the armed timer fires (it may outlive the wait it was armed for; see `wait`).
    @exclusivity(unchecked) var timerFiresAt: UInt64 = 0
    /// When the current wait times out; `.max` for a wait without a timeout.
    @exclusivity(unchecked) var waitDeadline: UInt64 = .max
    @exclusivity(unchecked) var timedOut = false
    /// Requests this connection carried; > 0 means it was reused.
    @exclusivity(unchecked) var uses = 0

    /// Counts a request about to be written on this connection; true when the connection carried
    /// one before (a failure may then be the keep-alive race: `UpstreamClient.mayRetry`).
    func beginRequest() -> Bool {
        let reused = uses > 0
        uses += 1
        wroteRequestBytes = false
        return reused
    }
    /// When the connection last went idle into a pool (`loop.now`).
    @exclusivity(unchecked) var idleSince: UInt64 = 0
    /// True while the connection sits idle in a pool (then any readiness means it is unusable).
    @exclusivity(unchecked) var idleInPool = false
    /// True once a byte of the current request has reached the socket (reset per request): until
    /// then the upstream cannot have seen, let alone acted on, the request.
    @exclusivity(unchecked) var wroteRequestBytes = false

    /// What a caller keeps with this connection across its answers (`UpstreamResponse.connectionMemo`).
    @exclusivity(unchecked) var memo: AnyObject?

    /// The TLS layer of an `https://` connection (`key.tls`), set once the handshake has begun.
    @exclusivity(unchecked) var tls: TLSSession?

    enum Wait { case nothing, readable, writable }

    /// Whether `lastDecision` and the parser's repeated field lines answer (the client's switch).
    let speedLayer: SpeedLayer

    init(fd: Int32, loop: EventLoop, key: UpstreamKey, speedLayer: SpeedLayer) {
        self.speedLayer = speedLayer
        self.fd = fd
        self.loop = loop
        self.key = key
    }

    deinit { input.deallocate() }

    /// Opens a connection, waiting at most `timeout` nanoseconds for the TCP handshake and, for a
    /// `key.tls` upstream, the TLS handshake with it (`TLSClientContext`: the server's certificate
    /// must chain to the system bundle and match `key.host`).
    static func open(_ key: UpstreamKey, address: SocketAddress, loop: EventLoop, timeout: UInt64,
                     speedLayer: SpeedLayer) async throws(UpstreamError) -> UpstreamConnection {
        let deadline = loop.now &+ timeout
        let started: (fd: Int32, inProgress: Bool)
        do {
            started = try Sockets.connect(to: address)
        } catch {
            throw .connectFailed("\(error)")
        }
        let connection = UpstreamConnection(fd: started.fd, loop: loop, key: key, speedLayer: speedLayer)
        do {
            try loop.register(started.fd, connection)
        } catch {
            Glibc.close(started.fd)
            throw .connectFailed("\(error)")
        }
        if started.inProgress {
            let ready = await connection.wait(for: .writable, timeout: timeout)
            if !ready {
                connection.close()
                throw connection.timedOut ? .connectTimeout : .connectFailed("connection refused")
            }
            let pending = Sockets.pendingError(started.fd)
            if pending != 0 {
                connection.close()
                throw .connectFailed(SocketError(call: "connect(\(address))", errno: pending).description)
            }
        }
        connection.writable = true
        if key.tls {
            do throws(UpstreamError) {
                try await connection.handshake(deadline: deadline)
            } catch {
                connection.close()
                throw error
            }
        }
        return connection
    }

    /// The TLS handshake, driven by readiness until done or `deadline`.
    func handshake(deadline: UInt64) async throws(UpstreamError) {
        let session = try TLSSession(fd: fd, host: key.host, port: key.port, context: try TLSClientContext.current())
        tls = session
        while true {
            let step = session.handshake()
            let wait: Wait
            switch step {
            case .done: return
            case .wantRead: readable = false; wait = .readable
            case .wantWrite: writable = false; wait = .writable
            case .closed: throw .connectFailed("TLS handshake: the server closed the connection")
            case .failed(let why): throw .connectFailed(why)
            }
            let now = loop.now
            guard now < deadline else { throw .connectTimeout }
            if !(await self.wait(for: wait, timeout: deadline - now)) {
                throw timedOut ? .connectTimeout : .connectFailed("TLS handshake: the connection closed")
            }
        }
    }

    // MARK: Readiness

    func socketReadable() {
        readable = true
        if waitingFor == .readable { resumeWaiter(true) }
        else if idleInPool && !closed { checkIdleClose() }
    }

    func socketWritable() {
        writable = true
        if waitingFor == .writable { resumeWaiter(true) }
    }

    /// The upstream shut down its sending side (EPOLLRDHUP, reported with the readable edge): keep
    /// reading after a short read until the EOF, which waits behind the last bytes and gets no edge
    /// of its own. Without this an answer cut by a FIN left the browser's connection waiting for
    /// the body's idle timeout (found by the fault harness, `e2e/test_faults.py`).
    func socketReadHangup() {
        peerShutdownSeen = true
    }

    var peerShutdownSeen = false

    func socketHangup() {
        peerClosed = true
        readable = true
        if waiter != nil || callbackWaiter != nil { resumeWaiter(waitingFor == .readable) } else if idleInPool { close() }
    }

    func resumeWaiter(_ value: Bool) {
        guard let waiter else {
            // Cleared before the call: the receiver may start this connection's next wait.
            if let receiver = callbackWaiter {
                callbackWaiter = nil
                waitingFor = .nothing
                receiver.upstreamAnswered()
            }
            return
        }
        self.waiter = nil
        waitingFor = .nothing
        waiter.resume(returning: value)
    }

    /// Waits for readiness; false on timeout or close.
    func wait(for what: Wait, timeout: UInt64?) async -> Bool {
        if closed { return false }
        // Without a hop to the caller's isolation before suspending and after resuming (two task
        // switches, each a status-lock lookup of the executor preference, on every proxied
        // request): this runs on the loop, and the waiter is resumed on the loop, which the task
        // prefers, so there is no other executor to hop to.
        return await _unsafeInheritExecutor_withUnsafeContinuation { continuation in
            waiter = continuation
            beginWait(for: what, timeout: timeout)
        }
    }

    /// Calls `receiver.upstreamAnswered()` (on the loop) once the socket is readable, closed, or
    /// `timeout` nanoseconds have passed: the callback form of waiting for the answer's first bytes,
    /// for an exchange begun without a task. False, registering nothing, when there is no edge to
    /// wait for: the connection is closed, or readiness came already (edge-triggered: it would not
    /// be announced again).
    func notifyWhenReadable(_ receiver: any UpstreamCallReceiver, timeout: UInt64) -> Bool {
        if closed || readable { return false }
        callbackWaiter = receiver
        beginWait(for: .readable, timeout: timeout)
        return true
    }

    func beginWait(for what: Wait, timeout: UInt64?) {
        waitingFor = what
        timedOut = false
        guard let timeout else {
            waitDeadline = .max
            return
        }
        let now = loop.now
        waitDeadline = now &+ timeout
        // A busy keep-alive connection waits on every request; scheduling and cancelling a timer
        // each time would cost more than the wait itself. One armed timer is kept instead and
        // re-armed from `timerFired` while waits keep moving the deadline.
        if timer == nil || timerFiresAt > waitDeadline {
            if let timer { loop.cancelTimer(timer) }
            armTimer(now: now)
        }
    }

    func armTimer(now: UInt64) {
        timerFiresAt = waitDeadline
        // Captured strongly: a weak reference gives the object a side table, and every retain and
        // release of it after that takes the runtime's slow path (several per proxied request).
        // The timer keeps the connection at most until it fires; `close` cancels it.
        timer = loop.scheduleTimer(afterNanoseconds: waitDeadline &- now) { [self] in timerFired() }
    }

    func timerFired() {
        timer = nil
        guard waiter != nil || callbackWaiter != nil, waitDeadline != .max else { return }
        let now = EventLoop.monotonicNow()
        if now >= waitDeadline {
            timedOut = true
            resumeWaiter(false)
        } else {
            armTimer(now: now)
        }
    }

    /// An idle pooled connection became readable: the upstream closed it (or sent garbage). Either way
    /// it is no longer reusable.
    func checkIdleClose() {
        if let tls {
            if !tls.idleConnectionStillUsable() { peerClosed = true; close() } else { readable = false }
            return
        }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK))
        if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || n > 0 {
            peerClosed = true
            close()
        }
    }

    /// True when a pooled connection still looks usable.
    var isReusable: Bool { !closed && !peerClosed && !peerShutdownSeen }

    // MARK: Writing

    /// Where request heads are encoded: kept (with its capacity) for the connection's next request.
    /// Unchecked as the state above: emptied, encoded into by an encoder that calls nothing back,
    /// and passed to `write` by value, each in its own statement.
    @exclusivity(unchecked) var headBuffer: [UInt8] = []

    /// Encodes a request head with `encode` into the connection's head buffer and sends it. The
    /// buffer is unshared again once `write` returns, so the next head reuses its memory.
    func writeHead(timeout: UInt64, _ encode: (inout [UInt8]) -> Void) async throws(UpstreamError) {
        headBuffer.removeAll(keepingCapacity: headBuffer.capacity <= 16 * 1024)
        encode(&headBuffer)
        try await write(headBuffer, timeout: timeout)
    }

    /// How far `writeHeadNow` got.
    enum ImmediateSend { case sent, partlySent, notSent }

    /// Encodes a request head like `writeHead` and sends it without waiting: `.partlySent` leaves
    /// the rest queued for `write([], timeout:)`; `.notSent` means not one byte left (the socket
    /// full, or the upstream gone: then the connection is no longer reusable). Plain TCP only, and
    /// nothing queued before (a pooled connection): otherwise `.notSent` too, for `write` to do.
    func writeHeadNow(_ encode: (inout [UInt8]) -> Void) -> ImmediateSend {
        guard tls == nil, output.isEmpty, !closed else { return .notSent }
        headBuffer.removeAll(keepingCapacity: headBuffer.capacity <= 16 * 1024)
        encode(&headBuffer)
        while true {
            let n = headBuffer.withUnsafeBytes { raw in send(fd, raw.baseAddress!, raw.count, Int32(MSG_NOSIGNAL)) }
            if n == headBuffer.count { wroteRequestBytes = true; return .sent }
            if n > 0 {
                wroteRequestBytes = true
                output = headBuffer
                outputOffset = n
                writable = false
                return .partlySent
            }
            let err = errno
            if n < 0 && err == EINTR { continue }
            if n < 0 && (err == EAGAIN || err == EWOULDBLOCK) { writable = false } else { peerClosed = true }
            return .notSent
        }
    }

    /// Whether bytes of a request are still queued (after `writeHeadNow`'s `.partlySent`).
    var hasQueuedOutput: Bool { outputOffset < output.count }

    /// Sends bytes, waiting while the socket buffer is full (back-pressure towards the client).
    func write(_ bytes: [UInt8], timeout: UInt64) async throws(UpstreamError) {
        // The usual case, nothing pending: send from the caller's array itself (no copy).
        if output.isEmpty { output = bytes } else { output.append(contentsOf: bytes) }
        while outputOffset < output.count {
            if closed { throw .connectionClosed }
            if let tls {
                let step = output.withUnsafeBytes { raw in
                    tls.write(raw.baseAddress! + outputOffset, count: raw.count - outputOffset)
                }
                switch step {
                case .done(let n): outputOffset += n; wroteRequestBytes = true; continue
                case .wantWrite, .wantRead:
                    let what: Wait = step == .wantRead ? .readable : .writable
                    if what == .readable { readable = false } else { writable = false }
                    if !(await wait(for: what, timeout: timeout)) { throw timedOut ? .bodyTimeout : .connectionClosed }
                    continue
                case .closed, .failed:
                    peerClosed = true
                    throw .connectionClosed
                }
            }
            let n = output.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + outputOffset, raw.count - outputOffset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 { outputOffset += n; wroteRequestBytes = true; continue }
            let err = errno
            if n < 0 && err == EINTR { continue }
            if n < 0 && (err == EAGAIN || err == EWOULDBLOCK) {
                writable = false
                if !(await wait(for: .writable, timeout: timeout)) {
                    throw timedOut ? .bodyTimeout : .connectionClosed
                }
                continue
            }
            peerClosed = true
            throw .connectionClosed
        }
        // Usually `output` is the caller's array: emptying it in place would copy (and allocate)
        // because the caller still holds it, so let it go instead.
        output = []
        outputOffset = 0
    }

    // Read by `UpstreamConnection+Reading`.
    /// The last decision `decide` made on this connection, with what it was made from.
    struct Decision {
        let headers: HTTPHeaders
        let status: Int
        let version: HTTPVersion
        let requestMethod: String
        let framing: UpstreamResponseFraming
        let keepAlive: Bool
    }
    @exclusivity(unchecked) var lastDecision: Decision?

    /// Body state of the response being read (unchecked as the state above: single statements, and
    /// the chunked decoder is handed the read buffer's bytes and calls nothing back).
    @exclusivity(unchecked) var framing: BodyFraming = .none
    @exclusivity(unchecked) var remaining = 0
    @exclusivity(unchecked) var decoder = ChunkedDecoder()
    @exclusivity(unchecked) var bodyDone = true
}

/// Where an upstream connection goes.
struct UpstreamKey: Hashable, Sendable {
    var host: String
    var port: Int
    /// `https://`: TLS to `host`, whose certificate must match it.
    var tls = false

    /// The scheme's port, which `Host` leaves out.
    var defaultPort: Int { tls ? 443 : 80 }
}
