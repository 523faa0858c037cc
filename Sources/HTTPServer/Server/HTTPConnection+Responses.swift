#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1
import TLSTransport

/// Answers written to the connection: complete, streamed, switched to another protocol, or the
/// server's own refusals; and what happens after each exchange (keep-alive, draining, closing).
extension HTTPConnection {
    // MARK: Responses

    /// Writes a complete response (head and body in one write).
    func writeComplete(_ response: HTTPResponse) {
        guard state == .handling, !turn.responseStarted else { return }
        turn.responseStarted = true
        let bodyAllowed = !(response.status == 204 || response.status == 304 || (100..<200).contains(response.status))
        // A HEAD answer may announce the length the GET would have (RFC 9110 §9.3.2).
        let keepDeclaredLength = bodyAllowed && turn.isHEAD && response.body.isEmpty && response.headers.contains("Content-Length")
        turn.status = response.status
        let nothingQueued = outputOffset == output.count
        ResponseHeadEncoder.encodeServerHead(status: response.status, headers: response.headers,
                                             keepContentLength: keepDeclaredLength,
                                             contentLength: bodyAllowed && !keepDeclaredLength ? response.body.count : nil,
                                             chunked: false, connection: connectionField(), into: &output)
        let sentFrom = outputOffset
        if bodyAllowed && !turn.isHEAD {
            turn.bytesSent = response.body.count
            if nothingQueued && response.body.count >= Self.gatherWriteMinimum && tls == nil {
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
    func sendHeadAndBody(_ body: [UInt8]) {
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
    func connectionField() -> String? {
        // An unread body we will not drain (or a refused 100-continue) forces a close.
        if !requestBody.isComplete {
            if turn.expectContinue && !turn.continueSent { turn.keepAlive = false }
            if case .contentLength = requestBody.framing, requestBody.remaining > config.maxDrainBytes { turn.keepAlive = false }
        }
        if !turn.keepAlive { return "close" }
        // RFC 9112 §C.2.2: an HTTP/1.0 client keeps the connection only if the answer says so.
        return turn.version == .http1_0 ? "keep-alive" : nil
    }

    func writeStreamHead(_ head: HTTPResponseHead, contentLength: Int?) {
        guard state == .handling, !turn.responseStarted else { return }
        turn.responseStarted = true
        let bodyAllowed = !(head.status == 204 || head.status == 304)
        var declaredLength: Int? = nil
        if let contentLength {
            if bodyAllowed { declaredLength = contentLength }
            streamingRemaining = contentLength
            streamingChunked = false
        } else if !bodyAllowed || turn.isHEAD {
            streamingChunked = false
            streamingRemaining = nil
        } else if parserVersionIs11 {
            streamingChunked = true
            streamingRemaining = nil
        } else {
            // HTTP/1.0 without a length: the end of the body is the end of the connection.
            turn.keepAlive = false
            streamingChunked = false
            streamingRemaining = nil
        }
        turn.status = head.status
        ResponseHeadEncoder.encodeServerHead(status: head.status, headers: head.headers, keepContentLength: false,
                                             contentLength: declaredLength, chunked: streamingChunked,
                                             connection: connectionField(), into: &output)
        flush()
    }

    var parserVersionIs11: Bool { turn.version == .http1_1 }

    /// Queues body bytes; returns false when the connection is gone.
    func writeStreamBody(_ bytes: [UInt8]) async -> Bool {
        guard state == .handling, turn.responseStarted, !bytes.isEmpty else { return state != .closed }
        if turn.isHEAD { return true }
        if streamingChunked {
            output.append(contentsOf: ChunkedEncoder.chunkHeader(bytes.count))
            output.append(contentsOf: bytes)
            output.append(13); output.append(10)
        } else {
            output.append(contentsOf: bytes)
        }
        turn.bytesSent += bytes.count
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
        guard state == .handling, turn.responseStarted else { return }
        if streamingChunked && !turn.isHEAD { output.append(contentsOf: ChunkedEncoder.lastChunk) }
        if let expected = streamingRemaining, expected != turn.bytesSent, !turn.isHEAD {
            // The body did not match the announced length: the client must not reuse this connection.
            turn.keepAlive = false
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
    func switchProtocols(_ head: HTTPResponseHead) -> (any ServerTunnelEndpoint)? {
        guard state == .handling, !turn.responseStarted, requestBody.isComplete, !shuttingDown, head.status == 101 else { return nil }
        turn.responseStarted = true
        turn.status = 101
        ResponseHeadEncoder.encodeServerHead(status: 101, headers: head.headers, keepContentLength: false,
                                             contentLength: nil, chunked: false, connection: "Upgrade", into: &output)
        flush()
        guard state == .handling else { return nil }
        let endpoint: any ServerTunnelEndpoint
        if let tls {
            endpoint = TLSEndpoint(fd: fd, loop: loop, stream: tls, leftover: Array(input.readable),
                                   unsent: Array(output[outputOffset...]))
            self.tls = nil
        } else {
            endpoint = SocketEndpoint(fd: fd, loop: loop, leftover: Array(input.readable),
                                      unsent: Array(output[outputOffset...]))
        }
        var record = HTTPAccessRecord(method: turn.method, path: turn.path, status: 101, bytesSent: 0,
                                      durationNanoseconds: EventLoop.monotonicNow() &- turn.startTime,
                                      requestID: turn.requestID, peer: peer)
        record.category = turn.category
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
    func writeServerError(status: Int, error: String, description: String) {
        var headers = server.defaultHeaders
        headers.set("Content-Type", "application/json")
        headers.set("Cache-Control", "no-store")
        let body = "{\"error\":\"\(error)\",\"error_description\":\"\(description)\"}"
        turn.keepAlive = false
        writeComplete(HTTPResponse(status: status, headers: headers, body: body))
    }

    /// Refuses a malformed request: answer, then close (RFC 9112 §11.2: never guess at framing).
    func refuse(status: Int, description: String) {
        state = .handling
        requestBody.abandon()
        // Nothing of the previous request may shape this answer: after a HEAD, the JSON body was
        // left out while its Content-Length was sent (found by the connection fuzzer).
        turn = RequestTurn(keepAlive: false, startTime: EventLoop.monotonicNow(), requestID: listener.nextRequestID())
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

    func exchangeFinished() {
        var record = HTTPAccessRecord(method: turn.method, path: turn.path, status: turn.status, bytesSent: turn.bytesSent,
                                      durationNanoseconds: EventLoop.monotonicNow() &- turn.startTime,
                                      requestID: turn.requestID, peer: peer)
        if let trace = turn.trace {
            record.traceID = trace.traceID
            if trace.recordsSpans {
                (record.spanID, record.parentSpanID) = (trace.span, trace.parentID)
            }
        }
        record.category = turn.category
        observer?.requestCompleted(record)
        current = nil
        turn.responseStarted = false
        if let waiter = bodyWaiter {
            bodyWaiter = nil
            waiter.resume(returning: .failure(.connectionClosed))
        }
        guard state != .closed else { return }
        if !turn.keepAlive {
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

    func readyForNextRequest() {
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
    func drainBody() {
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
}
