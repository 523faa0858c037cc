#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1

/// Why an upstream exchange failed. `connect*` and `firstByteTimeout` mean the upstream never
/// answered (the gateway says 502/504); the rest happen mid-exchange.
public enum UpstreamError: Error, Equatable, Sendable, CustomStringConvertible {
    case connectFailed(String)
    case connectTimeout
    case firstByteTimeout
    case bodyTimeout
    case invalidResponse(String)
    case connectionClosed
    case requestBody(HTTPBodyError)
    /// The request cannot be expressed to the upstream.
    case invalidRequest(String)

    public var description: String {
        switch self {
        case .connectFailed(let why): "connect failed: \(why)"
        case .connectTimeout: "connect timed out"
        case .firstByteTimeout: "no response in time"
        case .bodyTimeout: "response body stalled"
        case .invalidResponse(let why): "invalid response: \(why)"
        case .connectionClosed: "upstream closed the connection"
        case .requestBody(let error): "request body: \(error)"
        case .invalidRequest(let why): "invalid request: \(why)"
        }
    }
}

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
    private(set) lazy var hostLine: [UInt8] = RequestHeadEncoder.hostLine(hostName: key.host,
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
    @exclusivity(unchecked) private var input = ReadBuffer(capacity: 16 * 1024)
    @exclusivity(unchecked) private var headParser = ResponseHeadParser()
    @exclusivity(unchecked) private var output: [UInt8] = []
    @exclusivity(unchecked) private var outputOffset = 0
    @exclusivity(unchecked) private var readable = false
    @exclusivity(unchecked) private var writable = false
    @exclusivity(unchecked) private var peerClosed = false
    @exclusivity(unchecked) private(set) var closed = false
    @exclusivity(unchecked) private var waiter: UnsafeContinuation<Bool, Never>?
    /// Who waits by callback instead (`notifyWhenReadable`): an exchange begun on the loop without a
    /// task (`UpstreamCall`). At most one of `waiter` and this is set.
    @exclusivity(unchecked) private var callbackWaiter: (any UpstreamCallReceiver)?
    @exclusivity(unchecked) private var waitingFor: Wait = .nothing
    @exclusivity(unchecked) private var timer: TimerID?
    /// When the armed timer fires (it may outlive the wait it was armed for; see `wait`).
    @exclusivity(unchecked) private var timerFiresAt: UInt64 = 0
    /// When the current wait times out; `.max` for a wait without a timeout.
    @exclusivity(unchecked) private var waitDeadline: UInt64 = .max
    @exclusivity(unchecked) private var timedOut = false
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
    @exclusivity(unchecked) private var tls: TLSSession?

    private enum Wait { case nothing, readable, writable }

    init(fd: Int32, loop: EventLoop, key: UpstreamKey) {
        self.fd = fd
        self.loop = loop
        self.key = key
    }

    deinit { input.deallocate() }

    /// Opens a connection, waiting at most `timeout` nanoseconds for the TCP handshake and, for a
    /// `key.tls` upstream, the TLS handshake with it (`TLSClientContext`: the server's certificate
    /// must chain to the system bundle and match `key.host`).
    static func open(_ key: UpstreamKey, address: SocketAddress, loop: EventLoop, timeout: UInt64) async throws(UpstreamError) -> UpstreamConnection {
        let deadline = loop.now &+ timeout
        let started: (fd: Int32, inProgress: Bool)
        do {
            started = try Sockets.connect(to: address)
        } catch {
            throw .connectFailed("\(error)")
        }
        let connection = UpstreamConnection(fd: started.fd, loop: loop, key: key)
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
    private func handshake(deadline: UInt64) async throws(UpstreamError) {
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

    private var peerShutdownSeen = false

    func socketHangup() {
        peerClosed = true
        readable = true
        if waiter != nil || callbackWaiter != nil { resumeWaiter(waitingFor == .readable) } else if idleInPool { close() }
    }

    private func resumeWaiter(_ value: Bool) {
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
    private func wait(for what: Wait, timeout: UInt64?) async -> Bool {
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

    private func beginWait(for what: Wait, timeout: UInt64?) {
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

    private func armTimer(now: UInt64) {
        timerFiresAt = waitDeadline
        // Captured strongly: a weak reference gives the object a side table, and every retain and
        // release of it after that takes the runtime's slow path (several per proxied request).
        // The timer keeps the connection at most until it fires; `close` cancels it.
        timer = loop.scheduleTimer(afterNanoseconds: waitDeadline &- now) { [self] in timerFired() }
    }

    private func timerFired() {
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
    private func checkIdleClose() {
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
    @exclusivity(unchecked) private var headBuffer: [UInt8] = []

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

    // MARK: Reading

    /// Reads more bytes into the buffer, waiting up to `timeout`. Returns false at EOF.
    private func fill(timeout: UInt64?, onTimeout: UpstreamError) async throws(UpstreamError) -> Bool {
        while true {
            if closed { throw .connectionClosed }
            if peerClosed && !readable { return false }
            // Edge-triggered: no readiness event since the last drained read means no data yet, so
            // wait instead of spending a recv(2) on EAGAIN (one syscall saved per proxied request).
            if !readable {
                if !(await wait(for: .readable, timeout: timeout)) {
                    if timedOut { throw onTimeout }
                    if closed { throw .connectionClosed }
                }
                continue
            }
            let space = input.prepareForWrite(minimum: 4096, limit: 1 << 20)
            if let tls {
                let step = input.fill(maximum: space) { start, count in
                    let step = tls.read(into: start, count: count)
                    if case .done(let n) = step { return (n, step) }
                    return (0, step)
                }
                switch step {
                case .done: return true
                case .wantRead:
                    readable = false
                    if peerClosed { return false }
                    if !(await wait(for: .readable, timeout: timeout)) {
                        if timedOut { throw onTimeout }
                        if closed { throw .connectionClosed }
                    }
                case .wantWrite:
                    // A TLS 1.3 key update answered while reading: wait until it can be sent.
                    writable = false
                    if !(await wait(for: .writable, timeout: timeout)) {
                        if timedOut { throw onTimeout }
                        if closed { throw .connectionClosed }
                    }
                case .closed:
                    peerClosed = true; readable = false; return false
                case .failed(let why):
                    peerClosed = true; readable = false
                    throw .invalidResponse(why)
                }
                continue
            }
            let n = input.read(from: fd, maximum: space)
            if n > 0 {
                // A short read drained the socket; the next edge will announce more (but for an EOF
                // after a shutdown already reported: read on to it).
                if n < space && !peerShutdownSeen { readable = false }
                return true
            }
            if n == 0 { peerClosed = true; readable = false; return false }
            let err = errno
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK {
                readable = false
                if peerClosed { return false }
                if !(await wait(for: .readable, timeout: timeout)) {
                    if timedOut { throw onTimeout }
                    if closed { throw .connectionClosed }
                }
                continue
            }
            peerClosed = true
            return false
        }
    }

    /// Reads the final response head (interim 1xx answers are skipped; a `101` is refused) and
    /// decides its framing (`UpstreamResponseFraming`: ambiguous framing is refused).
    func readHead(requestMethod: String, timeout: UInt64) async throws(UpstreamError) -> (HTTPResponseHead, UpstreamResponseFraming, keepAlive: Bool) {
        let (head, version) = try await readFinalHead(timeout: timeout)
        let (framing, keepAlive) = try decideRemembering(head, version: version, requestMethod: requestMethod)
        return (head, framing, keepAlive)
    }

    /// The last decision `decide` made on this connection, with what it was made from.
    private struct Decision {
        let headers: HTTPHeaders
        let status: Int
        let version: HTTPVersion
        let requestMethod: String
        let framing: UpstreamResponseFraming
        let keepAlive: Bool
    }
    @exclusivity(unchecked) private var lastDecision: Decision?

    /// `decide`, or its last answer when the head is the last decided head again: the same status,
    /// version and method, and the very field list (the parser hands it back when the upstream sent
    /// the same field lines; holding it keeps its storage from being another list's). Only
    /// accepted heads are remembered, so a refused one is decided, and refused, every time.
    private func decideRemembering(_ head: HTTPResponseHead, version: HTTPVersion,
                                   requestMethod: String) throws(UpstreamError) -> (UpstreamResponseFraming, keepAlive: Bool) {
        if let last = lastDecision, last.headers.isSameStorage(as: head.headers), last.status == head.status,
           last.version == version, last.requestMethod == requestMethod {
            return (last.framing, last.keepAlive)
        }
        let (framing, keepAlive) = try Self.decide(head, version: version, requestMethod: requestMethod)
        lastDecision = Decision(headers: head.headers, status: head.status, version: version, requestMethod: requestMethod,
                                framing: framing, keepAlive: keepAlive)
        return (framing, keepAlive)
    }

    /// The framing of a final head's body, and whether the connection may carry another request.
    private static func decide(_ head: HTTPResponseHead, version: HTTPVersion,
                               requestMethod: String) throws(UpstreamError) -> (UpstreamResponseFraming, keepAlive: Bool) {
        let framing = try UpstreamResponseFraming(head, requestMethod: requestMethod, version: version)
        let keepAlive = version == .http1_1 ? !head.headers.hasToken("Connection", "close")
                                            : head.headers.hasToken("Connection", "keep-alive")
        return (framing, keepAlive && framing.leavesConnectionReusable)
    }

    /// `readHead` without waiting: one read if the socket is readable, then the final head if the
    /// buffer holds all of it. nil in every other case (no complete head yet, an interim 1xx, a
    /// malformed head, an EOF): nothing is consumed then, and `readHead` reads on from the same
    /// bytes and reaches the same verdict (the error, the interim answer skipped). Plain TCP only.
    func readHeadNow(requestMethod: String) -> (HTTPResponseHead, UpstreamResponseFraming, keepAlive: Bool)? {
        guard tls == nil, !closed else { return nil }
        if readable {
            let space = input.prepareForWrite(minimum: 4096, limit: 1 << 20)
            let n = input.read(from: fd, maximum: space)
            if n > 0 {
                if n < space { readable = false }
            } else if n == 0 {
                peerClosed = true; readable = false
            } else {
                let err = errno
                if err == EAGAIN || err == EWOULDBLOCK { readable = false } else if err != EINTR { peerClosed = true; readable = false }
            }
        }
        guard !input.isEmpty else { return nil }
        headParser.reset()
        let result = try? headParser.parse(input.readable)
        guard case .complete(let head, let consumed)? = consume result, !(100..<200).contains(head.status),
              let (framing, keepAlive) = try? decideRemembering(head, version: headParser.lastVersion, requestMethod: requestMethod) else {
            headParser.reset()
            return nil
        }
        input.consume(consumed)
        headParser.reset()
        return (head, framing, keepAlive)
    }

    /// Reads heads until one is final: interim 1xx answers are skipped, a `101` is returned as it
    /// is (the caller decides whether it asked for a protocol switch).
    func readFinalHead(timeout: UInt64) async throws(UpstreamError) -> (HTTPResponseHead, HTTPVersion) {
        // The connection's own parser (reset, not new): it reuses the Strings of the previous
        // answer's field lines that came again (`Date`, `Content-Type`, `Server`…).
        headParser.reset()
        let deadline = loop.now &+ timeout
        while true {
            if !input.isEmpty {
                let result: HeadParseResult<HTTPResponseHead>
                do { result = try headParser.parse(input.readable) } catch { throw .invalidResponse("\(error)") }
                if case .complete(let head, let consumed) = result {
                    input.consume(consumed)
                    let version = headParser.lastVersion
                    headParser.reset()
                    if (100..<200).contains(head.status) && head.status != 101 { continue }
                    return (head, version)
                }
            }
            let now = loop.now
            guard now < deadline else { throw .firstByteTimeout }
            if !(try await fill(timeout: deadline - now, onTimeout: .firstByteTimeout)) {
                throw input.isEmpty ? .connectionClosed : .invalidResponse("truncated head")
            }
        }
    }

    /// Body state of the response being read (unchecked as the state above: single statements, and
    /// the chunked decoder is handed the read buffer's bytes and calls nothing back).
    @exclusivity(unchecked) private var framing: BodyFraming = .none
    @exclusivity(unchecked) private var remaining = 0
    @exclusivity(unchecked) private var decoder = ChunkedDecoder()
    @exclusivity(unchecked) private(set) var bodyDone = true

    func beginBody(_ framing: BodyFraming) {
        self.framing = framing
        switch framing {
        case .none: bodyDone = true
        case .contentLength(let n): remaining = n; bodyDone = n == 0
        case .chunked: decoder = ChunkedDecoder(); bodyDone = false
        case .untilClose: bodyDone = false
        }
    }

    /// The next piece of the response body; nil at its end.
    func nextBodyPiece(idleTimeout: UInt64) async throws(UpstreamError) -> [UInt8]? {
        while !bodyDone {
            if !input.isEmpty {
                switch framing {
                case .contentLength:
                    let n = min(remaining, input.readableCount)
                    let piece = Array(UnsafeRawBufferPointer(rebasing: input.readable[0..<n]))
                    input.consume(n)
                    remaining -= n
                    if remaining == 0 { bodyDone = true }
                    return piece
                case .chunked:
                    var piece: [UInt8] = []
                    do {
                        let used = try decoder.decode(input.readable) { piece.append(contentsOf: $0) }
                        input.consume(used)
                    } catch {
                        throw .invalidResponse("\(error)")
                    }
                    if decoder.isComplete { bodyDone = true }
                    if !piece.isEmpty { return piece }
                    if bodyDone { return nil }
                case .untilClose:
                    let piece = Array(input.readable)
                    input.consume(piece.count)
                    return piece
                case .none:
                    bodyDone = true
                    return nil
                }
            }
            if !(try await fill(timeout: idleTimeout, onTimeout: .bodyTimeout)) {
                if framing == .untilClose { bodyDone = true; return nil }
                throw .connectionClosed
            }
        }
        return nil
    }

    /// The whole body when it already sits in the read buffer (small answers arrive with their head):
    /// the proxy can then answer in one write. nil when more must be read; nothing is consumed then.
    func takeWholeBodyIfBuffered() -> [UInt8]? {
        if bodyDone { return [] }
        switch framing {
        case .none:
            bodyDone = true
            return []
        case .contentLength:
            guard input.readableCount >= remaining else { return nil }
            let body = Array(UnsafeRawBufferPointer(rebasing: input.readable[0..<remaining]))
            input.consume(remaining)
            remaining = 0
            bodyDone = true
            return body
        case .chunked:
            // Decode with a copy of the decoder; commit only if the last chunk is already here.
            var trial = decoder
            var body: [UInt8] = []
            guard let used = try? trial.decode(input.readable, onData: { body.append(contentsOf: $0) }),
                  trial.isComplete else { return nil }
            input.consume(used)
            decoder = trial
            bodyDone = true
            return body
        case .untilClose:
            return nil
        }
    }

    /// True when the response ended exactly at its framing boundary with nothing extra buffered.
    /// For TLS, also nothing decrypted and left inside OpenSSL (a record longer than the answer),
    /// and for either, nothing already waiting in the socket when the last read filled the buffer
    /// (no readiness edge would announce those bytes before they were read as the next answer).
    var cleanlyFinished: Bool {
        guard bodyDone && input.isEmpty && !peerClosed && !closed else { return false }
        if let tls, tls.hasBufferedBytes { return false }
        if readable { return !hasBytesWaiting() }
        return true
    }

    /// Whether the socket (or the TLS layer) has bytes or an EOF this side has not read: one
    /// non-blocking peek.
    private func hasBytesWaiting() -> Bool {
        if let tls {
            guard tls.idleConnectionStillUsable() else { return true }
            readable = false
            return false
        }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
            readable = false
            return false
        }
        return true
    }

    /// Hands the socket over after a `101`: the connection leaves the loop (and never a pool) and
    /// the endpoint starts with the bytes the upstream sent behind the head.
    func detachForTunnel() -> any TunnelEndpoint {
        let endpoint: any TunnelEndpoint
        if let tls {
            endpoint = TLSEndpoint(fd: fd, loop: loop, session: tls, leftover: Array(input.readable))
            self.tls = nil
        } else {
            endpoint = SocketEndpoint(fd: fd, loop: loop, leftover: Array(input.readable))
        }
        input.consume(input.readableCount)
        closed = true
        loop.deregister(fd)
        if let timer { loop.cancelTimer(timer); self.timer = nil }
        resumeWaiter(false)
        return endpoint
    }

    func close() {
        guard !closed else { return }
        closed = true
        loop.deregister(fd)
        // close_notify when the exchange ended cleanly (a pooled connection given up); never
        // waits for the socket.
        tls?.free(sendCloseNotify: !peerClosed)
        tls = nil
        Glibc.close(fd)
        if let timer { loop.cancelTimer(timer); self.timer = nil }
        resumeWaiter(false)
    }
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
