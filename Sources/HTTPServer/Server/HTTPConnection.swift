#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1
import TLSTransport

/// One client connection: a state machine driven by socket readiness on its event loop.
///
/// Requests on a connection are handled one at a time, in order (pipelined requests wait in the read
/// buffer). All state is confined to the loop thread; handler tasks reach it through `Exchange`, which
/// hops to the loop first.
///
/// Back-pressure: answers wait in `output` until the client reads them. While more than
/// `writeHighWatermark` bytes are unsent, the connection parses no further request (pipelined ones stay
/// in the kernel's buffers, which then stop the client) and a streamed body's `writeBody` waits; both
/// resume once the client has taken the unsent bytes below `writeLowWatermark`. The send-progress
/// deadline runs while anything is unsent and is re-armed only when bytes leave, so a client that
/// pipelines requests but never reads is disconnected after `progressTimeoutNanoseconds`.
final class HTTPConnection: EventLoopSelectable, @unchecked Sendable {
    enum State {
        /// The TLS handshake of an HTTPS connection is under way (`HTTPConnection+TLS`).
        case handshaking
        case awaitingHead
        case handling
        /// The response is sent; unread request body is being discarded before the next request.
        case draining
        /// A final answer was sent and the write side shut: read and discard until EOF or the deadline.
        case lingering
        case closed
        /// Switched protocols: the socket belongs to a tunnel endpoint now (`switchProtocols`).
        case upgraded
    }

    let fd: Int32
    let peer: PeerAddress
    unowned let listener: Listener
    let loop: EventLoop
    let server: HTTPServer
    /// This loop's handler and observer (`HTTPHandler.loopHandler(for:)`).
    let handler: any HTTPHandler
    let observer: (any HTTPServerObserver)?
    var config: HTTPServerConfiguration { server.configuration }
    /// The server's memo switch, held by the connection: read per request without a copy of the
    /// configuration (and the reference counts both loops would write for it).
    let speedLayer: SpeedLayer

    // `@exclusivity(unchecked)` on the properties every request touches (state, output, deadlines,
    // flags, the request's `turn` and exchange): each checked access is a runtime
    // call, about 2 % of a proxied request together (callgrind, commits 539f757 and 99c517a). Safe because no access to one of them overlaps another access to
    // it: they are read or assigned in single statements, `output` is only appended to, encoded
    // into (`into: &output`, by encoders that call nothing back) or read by `send` inside
    // `withUnsafeBytes`, and continuations are resumed after the property was cleared. `input` and
    // `parser` likewise (commit 6329a18): the read buffer is only read, filled by `recv(2)` and
    // consumed in single statements (a pointer to its bytes is handed to the parsers, which call
    // nothing back), the parser is only called with that pointer. Keep it so: an overlapping
    // access is no longer trapped.
    @exclusivity(unchecked) var state: State = .awaitingHead
    /// The TLS layer of a connection on the HTTPS listener (nil: plain).
    @exclusivity(unchecked) var tls: TLSStream?
    /// A TLS read needed the socket writable, or a TLS write needed it readable (`HTTPConnection+TLS`).
    @exclusivity(unchecked) var tlsReadWaitsForWritable = false
    @exclusivity(unchecked) var tlsWriteWaitsForReadable = false
    @exclusivity(unchecked) var input = ReadBuffer(capacity: 8 * 1024, slab: .shared)
    @exclusivity(unchecked) var parser: RequestHeadParser
    @exclusivity(unchecked) var readReady = false
    @exclusivity(unchecked) var peerClosed = false
    @exclusivity(unchecked) var output: [UInt8] = []
    @exclusivity(unchecked) var outputOffset = 0
    /// The head, idle, body-progress and linger deadlines, and the send-progress one.
    @exclusivity(unchecked) var deadlines: ConnectionDeadlines
    /// When unsent output must have moved by (0: nothing unsent).
    var sendDeadline: UInt64 { deadlines.sendDeadline }
    /// Reading and parsing stopped because too much output is unsent (see the type's comment).
    @exclusivity(unchecked) var inputPaused = false
    /// `processInput` is on the stack: the request it just finished needs no scheduled continuation.
    @exclusivity(unchecked) var processingInput = false
    @exclusivity(unchecked) var shuttingDown = false

    /// The request the connection is on, made anew per request (`begin`, `refuse`).
    @exclusivity(unchecked) var turn = RequestTurn()
    // The exchange in progress.
    @exclusivity(unchecked) var current: Exchange?
    /// Runs the handler for this connection's requests (created for the first one that needs it).
    @exclusivity(unchecked) var runner: HandlerRunner?
    /// Framing, progress and limit of the current request's body.
    @exclusivity(unchecked) var requestBody: RequestBodyReader
    /// Unread body discarded after the response (bounded by `maxDrainBytes`).
    var drainedBytes = 0
    @exclusivity(unchecked) var bodyWaiter: UnsafeContinuation<Result<[UInt8]?, HTTPBodyError>, Never>?
    var drainWaiter: UnsafeContinuation<Bool, Never>?
    @exclusivity(unchecked) var streamingChunked = false
    @exclusivity(unchecked) var streamingRemaining: Int?

    init(fd: Int32, peer: PeerAddress, listener: Listener) {
        self.fd = fd
        self.peer = peer
        self.listener = listener
        self.loop = listener.loop
        self.server = listener.server
        handler = listener.handler
        observer = listener.observer
        let config = listener.server.configuration
        speedLayer = config.speedLayer
        parser = RequestHeadParser(limits: HTTPParserLimits(maxHeadBytes: config.maxHeadBytes))
        requestBody = RequestBodyReader(maxBodyBytes: config.maxBodyBytes)
        deadlines = ConnectionDeadlines(timeouts: .init(head: config.headTimeoutNanoseconds,
                                                        idle: config.idleTimeoutNanoseconds,
                                                        progress: config.progressTimeoutNanoseconds))
    }

    deinit { input.deallocate() }

    func start() {
        // A fresh connection must send its first head within the head timeout (slowloris defence).
        deadlines.arm(.head, now: loop.now)
    }

    // MARK: Readiness

    func socketReadable() {
        readReady = true
        if tls != nil && tlsReadinessCrossed(readable: true) { return }
        switch state {
        case .handshaking: continueHandshake()
        case .awaitingHead: processInput()
        case .handling: if bodyWaiter != nil { feedBodyWaiter() }
        case .draining: drainBody()
        case .lingering: discardUntilEOF()
        case .closed, .upgraded: break
        }
    }

    func socketWritable() {
        guard state != .closed, state != .upgraded else { return }
        if tls != nil && tlsReadinessCrossed(readable: false) { return }
        flush()
        if (inputPaused || drainWaiter != nil) && state != .closed
            && output.count - outputOffset <= config.writeLowWatermark {
            releaseBackPressure()
        }
    }

    /// Unsent response bytes.
    var unsentOutputCount: Int { output.count - outputOffset }

    /// A handler waits for request body bytes (for tests).
    var isAwaitingBody: Bool { bodyWaiter != nil }

    /// Bytes allocated for the read buffer and the output, 0 while released (for tests).
    var inputCapacity: Int { input.allocatedCapacity }
    var outputCapacity: Int { output.capacity }

    /// The output capacity a busy connection keeps between answers (larger is freed once sent).
    static let busyOutputCapacity = 64 * 1024
    /// The output capacity an idle connection keeps (larger is freed by the sweep).
    static let retainedOutputCapacity = 4 * 1024

    @exclusivity(unchecked) var idleBuffers = IdleBufferRelease()

    /// What the handler keeps with this connection across its requests (`RequestConnection.memo`);
    /// given back with the idle buffers. Loop thread only.
    @exclusivity(unchecked) var handlerKept: AnyObject?

    func handlerMemo<Memo: AnyObject>(_ make: () -> Memo) -> Memo {
        if let kept = handlerKept as? Memo { return kept }
        let made = make()
        handlerKept = made
        return made
    }

    /// Called by the server's deadline sweep: a connection idle for a whole sweep interval gives
    /// its read buffer back (allocated again by the next read) and keeps at most
    /// `retainedOutputCapacity` of output.
    /// Returns the bytes given back.
    func releaseBuffersIfIdle() -> Int {
        let idle = state == .awaitingHead && !readReady && input.isEmpty && output.isEmpty
        guard idleBuffers.sweep(idle: idle) else { return 0 }
        var released = input.allocatedCapacity
        input.releaseIfEmpty()
        parser.forgetPreviousHead()
        handlerKept = nil
        if output.capacity > Self.retainedOutputCapacity {
            released += output.capacity
            output = []
        }
        return released
    }

    /// The client took the unsent output below the low watermark: continue producing.
    func releaseBackPressure() {
        // Drop the bytes already sent, so a client reading steadily but never all of it cannot make
        // `output` grow by keeping it from ever being empty. At most the low watermark is moved.
        if outputOffset > 0 {
            output.removeSubrange(0..<outputOffset)
            outputOffset = 0
        }
        if let waiter = drainWaiter {
            drainWaiter = nil
            waiter.resume(returning: true)
        }
        if inputPaused {
            inputPaused = false
            // Edge-triggered epoll: bytes already buffered (and any the kernel holds, `readReady` is
            // still set) will not announce themselves again, so parse them now.
            if state == .awaitingHead { processInput() }
        }
    }

    func socketHangup() {
        close()
    }

    /// The client half-closed: keep reading until the EOF even after a short read, so a request sent
    /// with its FIN is answered and the connection then closed, not left to the idle timeout.
    func socketReadHangup() {
        peerShutdownSeen = true
    }

    @exclusivity(unchecked) var peerShutdownSeen = false

    // MARK: Reading

    /// Reads what the socket has into the input buffer. Returns false at EOF or on error.
    @discardableResult
    func readSocket(limit: Int) -> Bool {
        guard readReady, !peerClosed else { return !peerClosed }
        let space = input.prepareForWrite(minimum: 4096, limit: limit)
        if space <= 0 { return true }
        if let tls { return readTLS(tls, maximum: space) }
        let n = input.read(from: fd, maximum: space)
        if n > 0 {
            // A short read means the kernel buffer is empty for now; the next edge will tell us more.
            if n < space && !peerShutdownSeen { readReady = false }
            return true
        }
        if n == 0 {
            peerClosed = true
            readReady = false
            return false
        }
        let err = errno
        if err == EAGAIN || err == EWOULDBLOCK || err == EINTR {
            readReady = err == EINTR
            return true
        }
        peerClosed = true
        readReady = false
        return false
    }

    /// Requests one `processInput` call starts before it yields the loop to other connections.
    static let requestsPerTurn = 64

    /// Parses and starts as many requests as the buffered bytes allow.
    func processInput() {
        processingInput = true
        defer { processingInput = false }
        var budget = Self.requestsPerTurn
        while state == .awaitingHead {
            // A client that pipelines requests without reading the answers: stop here, so neither its
            // answers nor its requests pile up in memory (the socket buffers hold the rest).
            if output.count - outputOffset > config.writeHighWatermark {
                inputPaused = true
                return
            }
            if budget == 0 && (!input.isEmpty || readReady) {
                // A fast pipelining client must not keep the loop from its other connections.
                loop.execute { [self] in processInput() }
                return
            }
            if input.isEmpty || readReady {
                let wasEmpty = input.isEmpty
                readSocket(limit: config.maxHeadBytes + 8 * 1024)
                if wasEmpty && !input.isEmpty { deadlines.requestBytesArrived(now: loop.now) }
            }
            if input.isEmpty {
                if peerClosed { closeOnceSent() }
                return
            }
            let result: HeadParseResult<HTTPRequestHead>
            do {
                result = try parser.parse(input.readable, remembering: speedLayer.isOn)
            } catch {
                refuse(status: error.status, description: "\(error)")
                return
            }
            // Consumed: the head is moved into `begin`, not copied out of the result (through the
            // generic witnesses of the payload's tuple) and the result destroyed after.
            switch consume result {
            case .incomplete:
                if peerClosed { closeOnceSent(); return }
                if !readReady { return }
            case .complete(let head, let consumed):
                input.consume(consumed)
                parser.reset()
                budget -= 1
                begin(head)
            }
        }
    }

    func begin(_ head: consuming HTTPRequestHead) {
        idleBuffers.requestBegan()
        let framing: BodyFraming
        do {
            framing = try BodyFramingRules.request(head)
        } catch {
            refuse(status: error.status, description: "\(error)")
            return
        }
        requestBody.start(framing)
        // RFC 9110 §10.1.1: an HTTP/1.0 server ignores the expectation (1.0 has no interim responses).
        // The first `Expect` field's bytes (no String made for a value read once).
        var expects100 = false
        if head.version == .http1_1 {
            head.headers.forEachValueBytes("Expect") { value in
                expects100 = ByteSearch.equalIgnoringASCIICase(value, "100-continue")
                return false
            }
        }
        // A new turn, nothing of the previous one kept. Its clock reading is the loop's, taken when
        // it woke up with these bytes (as nginx starts `$request_time`): the duration includes the
        // wait behind the turn's earlier work, and a request costs one clock read instead of two.
        // Its trace is made where something reads it: the handler, or the access log (a fresh
        // trace costs three keyed hashes, a tenth of a `/healthz` answer).
        turn = RequestTurn(method: head.method, version: head.version, path: head.path, isHEAD: head.method == "HEAD",
                           keepAlive: head.keepAlive && !shuttingDown, expectContinue: expects100,
                           startTime: loop.now, requestID: listener.nextRequestID())
        state = .handling
        // Request-side deadlines only; answers still unsent keep their own `sendDeadline`.
        deadlines.clear()

        if case .contentLength(let n) = framing, n > config.maxBodyBytes {
            if server.recordsTraceIDs { turn.trace = server.trace(head.headers) }
            turn.keepAlive = false
            writeServerError(status: 413, error: "payload_too_large",
                             description: "The request body is larger than the limit of \(config.maxBodyBytes) bytes.")
            return
        }

        current = nil
        switch handler.answer(head, RequestConnection(self)) {
        case .now(let response):
            if let exchange = current {
                // Taken and then answered at once: the exchange writes it and is completed.
                _ = exchange.respondImmediately(response)
                exchange.handlerReturnedSoon()
                return
            }
            if server.recordsTraceIDs { turn.trace = server.trace(head.headers) }
            writeComplete(response)
        case .onLoop:
            break
        case .inTask(let work):
            let (request, exchange) = startExchange(head)
            if runner == nil { runner = HandlerRunner.start(on: loop) }
            runner?.submit(request, exchange, work)
        }
    }


    /// The request object and its exchange for the request being decided: the exchange and the
    /// trace are made once (`current` is nil until then), so a request taken on the loop and then
    /// handed to the task is the same request.
    func startExchange(_ head: HTTPRequestHead) -> (request: HTTPRequest, exchange: Exchange) {
        let exchange: Exchange, requestTrace: TraceParent
        if let current, let trace = turn.trace {
            (exchange, requestTrace) = (current, trace)
        } else {
            requestTrace = server.trace(head.headers)
            turn.trace = requestTrace
            exchange = Exchange(connection: self)
            current = exchange
        }
        return (HTTPRequest(head: head, body: exchange, peer: peer, id: turn.requestID, trace: requestTrace), exchange)
    }

    /// Set by `closeAfterFlush`: close once the queued answers are out (`HTTPConnection+Writing`).
    var closeWhenFlushed = false
}
