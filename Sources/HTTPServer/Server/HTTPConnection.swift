#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1

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
    private let server: HTTPServer
    /// This loop's handler and observer (`HTTPHandler.loopHandler(for:)`).
    private let handler: any HTTPHandler
    private let observer: (any HTTPServerObserver)?
    private var config: HTTPServerConfiguration { server.configuration }

    // `@exclusivity(unchecked)` on the properties every request touches (state, output, deadlines,
    // flags, and the request's method, path, ids and exchange): each checked access is a runtime
    // call, about 2 % of a proxied request together (callgrind, commits 539f757 and 99c517a). Safe because no access to one of them overlaps another access to
    // it: they are read or assigned in single statements, `output` is only appended to, encoded
    // into (`into: &output`, by encoders that call nothing back) or read by `send` inside
    // `withUnsafeBytes`, and continuations are resumed after the property was cleared. `input` and
    // `parser` likewise (commit 6329a18): the read buffer is only read, filled by `recv(2)` and
    // consumed in single statements (a pointer to its bytes is handed to the parsers, which call
    // nothing back), the parser is only called with that pointer. Keep it so: an overlapping
    // access is no longer trapped.
    @exclusivity(unchecked) private(set) var state: State = .awaitingHead
    @exclusivity(unchecked) private var input = ReadBuffer(capacity: 8 * 1024, slab: .shared)
    @exclusivity(unchecked) private var parser: RequestHeadParser
    @exclusivity(unchecked) private var readReady = false
    @exclusivity(unchecked) private var peerClosed = false
    @exclusivity(unchecked) private var output: [UInt8] = []
    @exclusivity(unchecked) private var outputOffset = 0
    /// The head, idle, body-progress and linger deadlines, and the send-progress one.
    @exclusivity(unchecked) private var deadlines: ConnectionDeadlines
    /// When unsent output must have moved by (0: nothing unsent).
    var sendDeadline: UInt64 { deadlines.sendDeadline }
    /// Reading and parsing stopped because too much output is unsent (see the type's comment).
    @exclusivity(unchecked) private(set) var inputPaused = false
    /// `processInput` is on the stack: the request it just finished needs no scheduled continuation.
    @exclusivity(unchecked) private var processingInput = false
    @exclusivity(unchecked) private var shuttingDown = false

    // The exchange in progress.
    @exclusivity(unchecked) private(set) var current: Exchange?
    /// Runs the handler for this connection's requests (created for the first one that needs it).
    @exclusivity(unchecked) private var runner: HandlerRunner?
    /// Framing, progress and limit of the current request's body.
    @exclusivity(unchecked) private var requestBody: RequestBodyReader
    /// Unread body discarded after the response (bounded by `maxDrainBytes`).
    private var drainedBytes = 0
    @exclusivity(unchecked) private var bodyFailed: HTTPBodyError?
    @exclusivity(unchecked) private var bodyWaiter: UnsafeContinuation<Result<[UInt8]?, HTTPBodyError>, Never>?
    private var drainWaiter: UnsafeContinuation<Bool, Never>?
    @exclusivity(unchecked) private var expectContinue = false
    @exclusivity(unchecked) private var continueSent = false
    @exclusivity(unchecked) private var keepAlive = true
    @exclusivity(unchecked) private var isHEAD = false
    @exclusivity(unchecked) private var startTime: UInt64 = 0
    @exclusivity(unchecked) private var method = ""
    @exclusivity(unchecked) private var version = HTTPVersion.http1_1
    @exclusivity(unchecked) private var path: Substring = ""
    @exclusivity(unchecked) private var requestID = RequestID(loop: 0, number: 0)
    /// The request's W3C trace (received or fresh), for the handler and the access log.
    @exclusivity(unchecked) private var trace: TraceParent?
    @exclusivity(unchecked) private var status = 0
    @exclusivity(unchecked) private var bytesSent = 0
    @exclusivity(unchecked) private var streamingChunked = false
    @exclusivity(unchecked) private var streamingRemaining: Int?
    @exclusivity(unchecked) private var responseStarted = false

    init(fd: Int32, peer: PeerAddress, listener: Listener) {
        self.fd = fd
        self.peer = peer
        self.listener = listener
        self.loop = listener.loop
        self.server = listener.server
        handler = listener.handler
        observer = listener.observer
        let config = listener.server.configuration
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
        switch state {
        case .awaitingHead: processInput()
        case .handling: if bodyWaiter != nil { feedBodyWaiter() }
        case .draining: drainBody()
        case .lingering: discardUntilEOF()
        case .closed, .upgraded: break
        }
    }

    func socketWritable() {
        guard state != .closed, state != .upgraded else { return }
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

    @exclusivity(unchecked) private var idleBuffers = IdleBufferRelease()

    /// What the handler keeps with this connection across its requests (`RequestConnection.memo`);
    /// given back with the idle buffers. Loop thread only.
    @exclusivity(unchecked) private var handlerKept: AnyObject?

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
    private func releaseBackPressure() {
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

    @exclusivity(unchecked) private var peerShutdownSeen = false

    // MARK: Reading

    /// Reads what the socket has into the input buffer. Returns false at EOF or on error.
    @discardableResult
    private func readSocket(limit: Int) -> Bool {
        guard readReady, !peerClosed else { return !peerClosed }
        let space = input.prepareForWrite(minimum: 4096, limit: limit)
        if space <= 0 { return true }
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
    private static let requestsPerTurn = 64

    /// Parses and starts as many requests as the buffered bytes allow.
    private func processInput() {
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
                result = try parser.parse(input.readable)
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

    private func begin(_ head: consuming HTTPRequestHead) {
        idleBuffers.requestBegan()
        let framing: BodyFraming
        do {
            framing = try BodyFramingRules.request(head)
        } catch {
            refuse(status: error.status, description: "\(error)")
            return
        }
        requestBody.start(framing)
        bodyFailed = nil
        // RFC 9110 §10.1.1: an HTTP/1.0 server ignores the expectation (1.0 has no interim responses).
        // The first `Expect` field's bytes (no String made for a value read once).
        var expects100 = false
        if head.version == .http1_1 {
            head.headers.forEachValueBytes("Expect") { value in
                expects100 = ByteSearch.equalIgnoringASCIICase(value, "100-continue")
                return false
            }
        }
        expectContinue = expects100
        continueSent = false
        keepAlive = head.keepAlive && !shuttingDown
        isHEAD = head.method == "HEAD"
        method = head.method
        version = head.version
        path = head.path
        // The turn's clock reading (taken when the loop woke up with these bytes, as nginx starts
        // `$request_time`): the duration includes the wait behind the turn's earlier work, and a
        // request costs one clock read instead of two.
        startTime = loop.now
        status = 0
        bytesSent = 0
        responseStarted = false
        requestID = listener.nextRequestID()
        // Made where something reads it: the handler, or the access log (a fresh trace costs
        // three keyed hashes, a tenth of a `/healthz` answer).
        trace = nil
        category = nil
        state = .handling
        // Request-side deadlines only; answers still unsent keep their own `sendDeadline`.
        deadlines.clear()

        if case .contentLength(let n) = framing, n > config.maxBodyBytes {
            if server.recordsTraceIDs { trace = TraceParent.continuing(head.headers) }
            keepAlive = false
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
            if server.recordsTraceIDs { trace = TraceParent.continuing(head.headers) }
            writeComplete(response)
        case .onLoop:
            break
        case .inTask(let work):
            let (request, exchange) = startExchange(head)
            if runner == nil { runner = HandlerRunner.start(on: loop) }
            runner?.submit(request, exchange, work)
        }
    }

    /// What the handler said the current request is (`RequestConnection.categorize`), for its record.
    var category: Int?

    /// The request object and its exchange for the request being decided: the exchange and the
    /// trace are made once (`current` is nil until then), so a request taken on the loop and then
    /// handed to the task is the same request.
    func startExchange(_ head: HTTPRequestHead) -> (request: HTTPRequest, exchange: Exchange) {
        let exchange: Exchange, requestTrace: TraceParent
        if let current, let trace {
            (exchange, requestTrace) = (current, trace)
        } else {
            requestTrace = TraceParent.continuing(head.headers)
            trace = requestTrace
            exchange = Exchange(connection: self)
            current = exchange
        }
        return (HTTPRequest(head: head, body: exchange, peer: peer, id: requestID, trace: requestTrace), exchange)
    }

    // MARK: Request body

    var declaredLength: Int? { requestBody.declaredLength }

    /// Called from `Exchange.next()` on the loop thread.
    func nextBodyPiece() async -> Result<[UInt8]?, HTTPBodyError> {
        if let failed = bodyFailed { return .failure(failed) }
        if let piece = takeBufferedBody() { return piece }
        if requestBody.isComplete { return .success(nil) }
        if state == .closed { return .failure(.connectionClosed) }
        // Once a final head is out, an interim one would land inside that response's body: the
        // client has its answer and sends the body or not (the connection closes afterwards).
        if expectContinue && !continueSent && !responseStarted {
            continueSent = true
            output.append(contentsOf: HTTPConnection.continueLine)
            flush()
            // A failed send closes the connection (and frees its fd number): do not read it now.
            if state == .closed { return .failure(.connectionClosed) }
        }
        if let piece = readBodyPiece() { return piece }
        return await withUnsafeContinuation { continuation in
            bodyWaiter = continuation
            deadlines.arm(.progress, now: loop.now)
        }
    }

    private static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private func feedBodyWaiter() {
        guard let waiter = bodyWaiter, let piece = readBodyPiece() else { return }
        bodyWaiter = nil
        deadlines.clear()
        waiter.resume(returning: piece)
    }

    /// Reads until the bytes give a body piece (or the body's end), the client's EOF shows, or the
    /// kernel has nothing more. nil: wait for the next readiness edge. One read is not enough: one
    /// that brings only framing bytes (a chunk header, a trailer) while the EOF waits behind them gets
    /// no further edge (found by the connection fuzzer: such a body waited for the progress timeout).
    private func readBodyPiece() -> Result<[UInt8]?, HTTPBodyError>? {
        while readReady && !peerClosed {
            let before = input.readableCount
            readSocket(limit: 64 * 1024)
            let grew = input.readableCount > before
            if let piece = takeBufferedBody() { return piece }
            if !grew { break }
        }
        return peerClosed ? .failure(.connectionClosed) : nil
    }

    /// Takes the body bytes already buffered. nil when none are (and the body is not finished).
    private func takeBufferedBody() -> Result<[UInt8]?, HTTPBodyError>? {
        if requestBody.isComplete { return .success(nil) }
        guard !input.isEmpty else { return nil }
        let (consumed, result) = requestBody.take(input.readable)
        input.consume(consumed)
        if case .failure(let error)? = result {
            keepAlive = false
            bodyFailed = error
        }
        return result
    }

    // MARK: Responses

    /// Writes a complete response (head and body in one write).
    func writeComplete(_ response: HTTPResponse) {
        guard state == .handling, !responseStarted else { return }
        responseStarted = true
        let bodyAllowed = !(response.status == 204 || response.status == 304 || (100..<200).contains(response.status))
        // A HEAD answer may announce the length the GET would have (RFC 9110 §9.3.2).
        let keepDeclaredLength = bodyAllowed && isHEAD && response.body.isEmpty && response.headers.contains("Content-Length")
        status = response.status
        let nothingQueued = outputOffset == output.count
        ResponseHeadEncoder.encodeServerHead(status: response.status, headers: response.headers,
                                             keepContentLength: keepDeclaredLength,
                                             contentLength: bodyAllowed && !keepDeclaredLength ? response.body.count : nil,
                                             chunked: false, connection: connectionField(), into: &output)
        let sentFrom = outputOffset
        if bodyAllowed && !isHEAD {
            bytesSent = response.body.count
            if nothingQueued && response.body.count >= Self.gatherWriteMinimum {
                sendHeadAndBody(response.body)
            } else {
                output.append(contentsOf: response.body)
            }
        }
        flush(progressSince: sentFrom)
        exchangeFinished()
    }

    /// Bodies from this size on (a cached file) go out with their head in one `sendmsg` instead of
    /// being copied behind it into the output buffer first (for a 12 KiB file the copy was a third
    /// of the instructions of its answer).
    static let gatherWriteMinimum = 2048

    /// Sends the head (all of `output` from `outputOffset`: nothing else is queued) and `body` in
    /// one call; what the socket does not take is queued as usual, for `flush` and the next
    /// writability. A failure queues the body too: `flush` meets it again and handles it.
    private func sendHeadAndBody(_ body: [UInt8]) {
        let headCount = output.count - outputOffset
        let sent = output.withUnsafeMutableBytes { head in
            body.withUnsafeBytes { bodyBytes in
                var parts = (iovec(iov_base: head.baseAddress! + outputOffset, iov_len: headCount),
                             iovec(iov_base: UnsafeMutableRawPointer(mutating: bodyBytes.baseAddress!), iov_len: bodyBytes.count))
                return withUnsafeMutableBytes(of: &parts) { vectors in
                    var message = msghdr()
                    message.msg_iov = vectors.baseAddress!.assumingMemoryBound(to: iovec.self)
                    message.msg_iovlen = 2
                    return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
                }
            }
        }
        if sent <= 0 {
            output.append(contentsOf: body)
        } else if sent < headCount {
            outputOffset += sent
            output.append(contentsOf: body)
        } else {
            outputOffset = output.count
            if sent - headCount < body.count { output.append(contentsOf: body[(sent - headCount)...]) }
        }
    }

    /// The `Connection` field of the answer (nil: none), deciding whether the connection persists.
    private func connectionField() -> String? {
        // An unread body we will not drain (or a refused 100-continue) forces a close.
        if !requestBody.isComplete {
            if expectContinue && !continueSent { keepAlive = false }
            if case .contentLength = requestBody.framing, requestBody.remaining > config.maxDrainBytes { keepAlive = false }
        }
        if !keepAlive { return "close" }
        // RFC 9112 §C.2.2: an HTTP/1.0 client keeps the connection only if the answer says so.
        return version == .http1_0 ? "keep-alive" : nil
    }

    func writeStreamHead(_ head: HTTPResponseHead, contentLength: Int?) {
        guard state == .handling, !responseStarted else { return }
        responseStarted = true
        let bodyAllowed = !(head.status == 204 || head.status == 304)
        var declaredLength: Int? = nil
        if let contentLength {
            if bodyAllowed { declaredLength = contentLength }
            streamingRemaining = contentLength
            streamingChunked = false
        } else if !bodyAllowed || isHEAD {
            streamingChunked = false
            streamingRemaining = nil
        } else if parserVersionIs11 {
            streamingChunked = true
            streamingRemaining = nil
        } else {
            // HTTP/1.0 without a length: the end of the body is the end of the connection.
            keepAlive = false
            streamingChunked = false
            streamingRemaining = nil
        }
        status = head.status
        ResponseHeadEncoder.encodeServerHead(status: head.status, headers: head.headers, keepContentLength: false,
                                             contentLength: declaredLength, chunked: streamingChunked,
                                             connection: connectionField(), into: &output)
        flush()
    }

    private var parserVersionIs11: Bool { version == .http1_1 }

    /// Queues body bytes; returns false when the connection is gone.
    func writeStreamBody(_ bytes: [UInt8]) async -> Bool {
        guard state == .handling, responseStarted, !bytes.isEmpty else { return state != .closed }
        if isHEAD { return true }
        if streamingChunked {
            output.append(contentsOf: ChunkedEncoder.chunkHeader(bytes.count))
            output.append(contentsOf: bytes)
            output.append(13); output.append(10)
        } else {
            output.append(contentsOf: bytes)
        }
        bytesSent += bytes.count
        flush()
        if state == .closed { return false }
        if output.count - outputOffset > config.writeHighWatermark {
            // Released by `releaseBackPressure` (below the low watermark) or `close`; the send-progress
            // deadline, armed by `flush`, ends a client that stops reading.
            return await withUnsafeContinuation { continuation in drainWaiter = continuation }
        }
        return true
    }

    func finishStream() {
        guard state == .handling, responseStarted else { return }
        if streamingChunked && !isHEAD { output.append(contentsOf: ChunkedEncoder.lastChunk) }
        if let expected = streamingRemaining, expected != bytesSent, !isHEAD {
            // The body did not match the announced length: the client must not reuse this connection.
            keepAlive = false
        }
        flush()
        exchangeFinished()
    }

    /// Switches the connection to another protocol (RFC 9110 §15.2.2): writes the `101` head and
    /// hands the socket to the caller as a tunnel endpoint, with the bytes the client already sent
    /// past the request and any part of the head the socket did not take yet. The connection is
    /// then done: it leaves the loop and its deadlines, but the endpoint still counts as an open
    /// connection of the listener until it closes, and server shutdown asks it to end.
    /// nil when the exchange cannot switch (an answer started, an unread request body, shutdown).
    func switchProtocols(_ head: HTTPResponseHead) -> SocketEndpoint? {
        guard state == .handling, !responseStarted, requestBody.isComplete, !shuttingDown, head.status == 101 else { return nil }
        responseStarted = true
        status = 101
        ResponseHeadEncoder.encodeServerHead(status: 101, headers: head.headers, keepContentLength: false,
                                             contentLength: nil, chunked: false, connection: "Upgrade", into: &output)
        flush()
        guard state == .handling else { return nil }
        let endpoint = SocketEndpoint(fd: fd, loop: loop, leftover: Array(input.readable),
                                      unsent: Array(output[outputOffset...]))
        var record = HTTPAccessRecord(method: method, path: path, status: 101, bytesSent: 0,
                                      durationNanoseconds: EventLoop.monotonicNow() &- startTime,
                                      requestID: requestID, peer: peer)
        record.category = category
        observer?.requestCompleted(record)
        state = .upgraded
        current = nil
        loop.deregister(fd)
        input.consume(input.readableCount)
        output = []
        outputOffset = 0
        runner?.close()
        runner = nil
        listener.upgraded(self, to: endpoint)
        return endpoint
    }

    /// Writes an answer the server produces itself (parse errors, limits) and closes.
    private func writeServerError(status: Int, error: String, description: String) {
        var headers = server.defaultHeaders
        headers.set("Content-Type", "application/json")
        headers.set("Cache-Control", "no-store")
        let body = "{\"error\":\"\(error)\",\"error_description\":\"\(description)\"}"
        keepAlive = false
        writeComplete(HTTPResponse(status: status, headers: headers, body: body))
    }

    /// Refuses a malformed request: answer, then close (RFC 9112 §11.2: never guess at framing).
    private func refuse(status: Int, description: String) {
        state = .handling
        requestBody.abandon()
        // Nothing of the previous request may shape this answer: after a HEAD, the JSON body was
        // left out while its Content-Length was sent (found by the connection fuzzer).
        isHEAD = false
        expectContinue = false
        method = "-"
        path = "-"
        category = nil
        requestID = listener.nextRequestID()
        trace = nil
        startTime = EventLoop.monotonicNow()
        responseStarted = false
        keepAlive = false
        let code: String
        switch status {
        case 431: code = "request_header_fields_too_large"
        case 505: code = "http_version_not_supported"
        case 501: code = "not_implemented"
        case 408: code = "request_timeout"
        default: code = "bad_request"
        }
        let safe = description.filter { $0 != "\"" && $0 != "\\" && $0.isASCII && !$0.isNewline }
        writeServerError(status: status, error: code, description: safe)
    }

    private func exchangeFinished() {
        var record = HTTPAccessRecord(method: method, path: path, status: status, bytesSent: bytesSent,
                                      durationNanoseconds: EventLoop.monotonicNow() &- startTime,
                                      requestID: requestID, peer: peer)
        record.traceID = trace?.traceID
        record.category = category
        observer?.requestCompleted(record)
        current = nil
        responseStarted = false
        if let waiter = bodyWaiter {
            bodyWaiter = nil
            waiter.resume(returning: .failure(.connectionClosed))
        }
        guard state != .closed else { return }
        if !keepAlive {
            closeAfterFlush()
            return
        }
        if !requestBody.isComplete {
            state = .draining
            drainedBytes = 0
            deadlines.arm(.progress, now: loop.now)
            drainBody()
            return
        }
        readyForNextRequest()
    }

    private func readyForNextRequest() {
        state = .awaitingHead
        // While the answer is on its way `sendDeadline` governs, and `flush` arms the idle or head
        // deadline once it is out.
        deadlines.awaitNextRequest(outputPending: outputOffset < output.count, inputBuffered: !input.isEmpty,
                                   now: loop.now)
        if shuttingDown && input.isEmpty {
            closeAfterFlush()
            return
        }
        // Continue with pipelined input, but from the loop rather than recursively (deep pipelines).
        // Inside `processInput` (an immediate answer) its loop simply continues. An EOF read along
        // with the last request comes with no further edge: it is acted on there too. (`self` held
        // strongly until then: a weak reference would give the connection a side table, and every
        // retain and release of it would take the runtime's slow path from then on.)
        if !processingInput && (!input.isEmpty || readReady || peerClosed) {
            loop.execute { [self] in processInput() }
        }
    }

    /// Discards the rest of an unread body (bounded) so the next request starts at its first byte.
    private func drainBody() {
        while state == .draining {
            switch takeBufferedBody() {
            case .some(.success(.some(let piece))):
                // Only what is discarded here counts: a chunked body's size is unknown when the
                // response goes out, so a large one is cut off here rather than read to the end.
                drainedBytes += piece.count
                if drainedBytes > config.maxDrainBytes { closeOnceSent(); return }
                continue
            case .some(.success(.none)):
                readyForNextRequest()
                return
            case .some(.failure):
                closeOnceSent()
                return
            case .none:
                if requestBody.isComplete { readyForNextRequest(); return }
                // The client's EOF was read already (say, while the handler read the body): no more
                // body comes, and no readiness edge will either (found by the connection fuzzer).
                if peerClosed { closeOnceSent(); return }
                if !readReady { return }
                if !readSocket(limit: 64 * 1024) { closeOnceSent(); return }
                if input.isEmpty && !readReady { return }
            }
        }
    }

    // MARK: Writing

    /// Sends what is queued. `progressSince`: where the bytes of this answer began when some of them
    /// already left in `sendHeadAndBody` (a send that then blocks still counts as progress).
    private func flush(progressSince start: Int? = nil) {
        let startOffset = start ?? outputOffset
        while outputOffset < output.count {
            let n = output.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + outputOffset, raw.count - outputOffset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                outputOffset += n
                continue
            }
            let err = errno
            if n < 0 && err == EINTR { continue }
            if n < 0 && (err == EAGAIN || err == EWOULDBLOCK) {
                // Output is waiting for the client: the connection lives as long as the client keeps
                // reading. Only bytes that leave extend it; new answers queued behind do not.
                deadlines.sendBlocked(moved: outputOffset > startOffset, now: loop.now)
                return
            }
            close()
            return
        }
        // An answer's capacity is kept for the next one unless it is large; what an idle
        // connection keeps is trimmed by the sweep (`releaseBuffersIfIdle`).
        output.removeAll(keepingCapacity: output.capacity <= Self.busyOutputCapacity)
        outputOffset = 0
        // The previous response is out: back to waiting for the next request.
        deadlines.sendCompleted(awaitingHead: state == .awaitingHead, inputBuffered: !input.isEmpty, now: loop.now)
        if let waiter = drainWaiter {
            drainWaiter = nil
            waiter.resume(returning: true)
        }
        if state == .lingering && closeWhenFlushed { shutdownWriteAndLinger() }
    }

    private var closeWhenFlushed = false

    /// Ends the connection, but only after the answers already queued are sent: neither the client's
    /// EOF (a client may half-close after its requests and still read) nor a body it will not finish
    /// may cut them off (found by the connection fuzzer with small socket buffers).
    private func closeOnceSent() {
        if outputOffset < output.count { closeAfterFlush() } else { close() }
    }

    private func closeAfterFlush() {
        state = .lingering
        closeWhenFlushed = true
        if outputOffset >= output.count {
            shutdownWriteAndLinger()
        } else {
            // The linger period starts once the answer is out; until then the client must keep
            // reading (`sendDeadline`).
            deadlines.clear()
        }
    }

    /// Half-closes, then reads and discards what the client still sends, so our final answer is not
    /// destroyed by a TCP reset caused by unread data (nginx's lingering close).
    private func shutdownWriteAndLinger() {
        closeWhenFlushed = false
        deadlines.arm(.linger, now: loop.now)
        shutdown(fd, Int32(SHUT_WR))
        discardUntilEOF()
    }

    private func discardUntilEOF() {
        guard state == .lingering, !closeWhenFlushed else { return }
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n > 0 { continue }
            if n == 0 { close(); return }
            let err = errno
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return }
            close()
            return
        }
    }

    // MARK: Deadlines and closing

    func checkDeadline(now: UInt64) {
        switch deadlines.expiry(now: now) {
        case .none:
            break
        case .headTimedOut:
            if state == .awaitingHead {
                refuse(status: 408, description: "The request head did not arrive in time.")
            }
        case .close:
            close()
        }
    }

    func beginShutdown() {
        shuttingDown = true
        keepAlive = false
        if state == .awaitingHead && input.isEmpty {
            if outputOffset < output.count { closeAfterFlush() } else { close() }
        }
    }

    func close() {
        guard state != .closed, state != .upgraded else { return }
        state = .closed
        loop.deregister(fd)
        Glibc.close(fd)
        if let waiter = bodyWaiter {
            bodyWaiter = nil
            waiter.resume(returning: .failure(.connectionClosed))
        }
        if let waiter = drainWaiter {
            drainWaiter = nil
            waiter.resume(returning: false)
        }
        current = nil
        runner?.close()
        runner = nil
        listener.removed(self)
    }
}
