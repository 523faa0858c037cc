#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1
import TLSTransport

/// The upstream's answer read from the connection: its head (with the framing decided from it)
/// and its body, awaited or taken when already buffered.
extension UpstreamConnection {
    // MARK: Reading

    /// Reads more bytes into the buffer, waiting up to `timeout`. Returns false at EOF.
    func fill(timeout: UInt64?, onTimeout: UpstreamError) async throws(UpstreamError) -> Bool {
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


    /// `decide`, or its last answer when the head is the last decided head again: the same status,
    /// version and method, and the very field list (the parser hands it back when the upstream sent
    /// the same field lines; holding it keeps its storage from being another list's). Only
    /// accepted heads are remembered, so a refused one is decided, and refused, every time.
    func decideRemembering(_ head: HTTPResponseHead, version: HTTPVersion,
                                   requestMethod: String) throws(UpstreamError) -> (UpstreamResponseFraming, keepAlive: Bool) {
        if speedLayer.isOn, let last = lastDecision, last.headers.isSameStorage(as: head.headers), last.status == head.status,
           last.version == version, last.requestMethod == requestMethod {
            return (last.framing, last.keepAlive)
        }
        let (framing, keepAlive) = try Self.decide(head, version: version, requestMethod: requestMethod)
        lastDecision = Decision(headers: head.headers, status: head.status, version: version, requestMethod: requestMethod,
                                framing: framing, keepAlive: keepAlive)
        return (framing, keepAlive)
    }

    /// The framing of a final head's body, and whether the connection may carry another request.
    static func decide(_ head: HTTPResponseHead, version: HTTPVersion,
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
        let result = try? headParser.parse(input.readable, remembering: speedLayer.isOn)
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
                do { result = try headParser.parse(input.readable, remembering: speedLayer.isOn) } catch { throw .invalidResponse("\(error)") }
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
    func hasBytesWaiting() -> Bool {
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
            endpoint = TLSEndpoint(fd: fd, loop: loop, stream: tls.stream, keeping: tls, leftover: Array(input.readable))
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
