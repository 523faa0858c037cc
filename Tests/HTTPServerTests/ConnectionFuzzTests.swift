#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Logging
import Testing
@testable import EventLoops
@testable import HTTP1
@testable import HTTPServer
import TestSupport

/// The fuzz server's handler: every behaviour bounded and a function of the path alone, so the oracle
/// below can tell which answers a byte stream must get.
/// - `/echo` reads the body and sends it back (413 too large, 400 malformed, nothing when the
///   connection ends first: the server then answers 500).
/// - `/stream`: a chunked answer in three pieces; `/fixed`: 1000 bytes with a Content-Length, streamed.
/// - `/immediate`: answered from `immediateResponse`. Anything else: 200 with the target, body unread.
struct FuzzHandler: TaskHTTPHandler {
    static func readsBody(_ path: Substring) -> Bool { path == "/echo" }

    func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse? {
        head.path == "/immediate" ? HTTPResponse(status: 200, body: "immediate") : nil
    }

    func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async {
        do {
            switch request.head.path {
            case "/echo":
                do {
                    let body = try await request.body.collect(limit: .max)
                    await writer.respond(HTTPResponse(status: 200, body: body))
                } catch .tooLarge {
                    await writer.respond(HTTPResponse(status: 413, body: "too large"))
                } catch .malformed {
                    await writer.respond(HTTPResponse(status: 400, body: "malformed"))
                } catch {}
            case "/stream":
                try await writer.writeHead(HTTPResponseHead(status: 200), contentLength: nil)
                for i in 0..<3 { try await writer.writeBody(pattern(from: i * 100, count: 100)) }
                try await writer.finish()
            case "/fixed":
                try await writer.writeHead(HTTPResponseHead(status: 200), contentLength: 1000)
                try await writer.writeBody(pattern(from: 0, count: 600))
                try await writer.writeBody(pattern(from: 600, count: 400))
                try await writer.finish()
            default:
                await writer.respond(HTTPResponse(status: 200, body: request.head.target))
            }
        } catch {
            // The connection went away mid-answer: nothing left to do.
        }
    }
}

/// The answers a byte stream must get, worked out with the pure parsers (the same ones the connection
/// uses) and the contract: requests are answered in order until one is refused (its status, then
/// close), asks to close, or cannot be completed before the client's EOF.
struct ExpectedAnswer: CustomStringConvertible {
    var method: String
    /// The status the server itself must answer with (400, 413, 431, 501, 505); nil: the handler's.
    var refusal: Int?
    var description: String { refusal.map { "\(method) refused \($0)" } ?? method }

    static func of(_ input: [UInt8], configuration: HTTPServerConfiguration) -> [ExpectedAnswer] {
        var answers: [ExpectedAnswer] = []
        var offset = 0
        while true {
            var parser = RequestHeadParser(limits: HTTPParserLimits(maxHeadBytes: configuration.maxHeadBytes))
            switch parser.outcome(input[offset...]) {
            case .incomplete:
                return answers  // closed at EOF without an answer
            case .failed(let error):
                return answers + [ExpectedAnswer(method: "-", refusal: error.status)]
            case .complete(let head, let consumed):
                offset += consumed
                let framing: BodyFraming
                do { framing = try BodyFramingRules.request(head) } catch {
                    return answers + [ExpectedAnswer(method: head.method, refusal: error.status)]
                }
                if case .contentLength(let n) = framing, n > configuration.maxBodyBytes {
                    return answers + [ExpectedAnswer(method: head.method, refusal: 413)]
                }
                answers.append(ExpectedAnswer(method: head.method, refusal: nil))
                var last = !head.keepAlive
                let hasBody: Bool
                switch framing {
                case .none:
                    hasBody = false
                case .contentLength(let n):
                    hasBody = n > 0
                    if input.count - offset < n { last = true } else { offset += n }
                case .chunked:
                    hasBody = true
                    var decoder = ChunkedDecoder()
                    var size = 0
                    let used = try? input[offset...].withUnsafeBytes { raw in
                        try decoder.decode(raw) { size += $0.count }
                    }
                    if let used, decoder.isComplete, size <= configuration.maxBodyBytes { offset += used } else { last = true }
                case .untilClose:
                    hasBody = true
                    last = true
                }
                // A refused `100-continue` (the body is never asked for) closes the connection.
                let expectsContinue = head.version == .http1_1
                    && (head.headers["Expect"].map { $0.asciiCaseInsensitiveEquals("100-continue") } ?? false)
                if expectsContinue && hasBody && !FuzzHandler.readsBody(head.path) { last = true }
                // HTTP/1.0 has no chunked coding: a streamed answer ends with the connection.
                if head.version == .http1_0 && head.path == "/stream" && head.method != "HEAD" { last = true }
                if last { return answers }
            }
        }
    }
}

/// Checks what the server sent on one connection against the expected answers: each a well-formed
/// HTTP/1.1 response framed as RFC 9112 §6.3 says, in order, refusals with their status, a JSON body
/// and `Connection: close`, and not a byte after an answer that announced the close, or after the last.
func answerProblems(_ output: [UInt8], expected: [ExpectedAnswer]) -> String? {
    var offset = 0
    var index = 0
    while offset < output.count {
        guard index < expected.count else {
            return "\(output.count - offset) bytes after the \(expected.count) expected answers"
        }
        var parser = ResponseHeadParser()
        let head: HTTPResponseHead
        switch parser.outcome(output[offset...]) {
        case .incomplete: return "answer \(index): truncated head"
        case .failed(let error): return "answer \(index): malformed head (\(error))"
        case .complete(let parsed, let consumed):
            head = parsed
            offset += consumed
        }
        if parser.lastVersion != .http1_1 { return "answer \(index): version \(parser.lastVersion)" }
        if (100...199).contains(head.status) {
            if head.status != 100 { return "answer \(index): interim \(head.status)" }
            continue
        }
        let want = expected[index]
        let framing: BodyFraming
        do {
            framing = try BodyFramingRules.response(head, requestMethod: want.method == "HEAD" ? "HEAD" : "GET")
        } catch {
            return "answer \(index): unframeable (\(error))"
        }
        var body: [UInt8] = []
        switch framing {
        case .none: break
        case .contentLength(let n):
            guard output.count - offset >= n else { return "answer \(index): body truncated" }
            body = Array(output[offset..<(offset + n)])
            offset += n
        case .chunked:
            var decoder = ChunkedDecoder()
            do {
                let used = try output[offset...].withUnsafeBytes { raw in
                    try decoder.decode(raw) { body.append(contentsOf: $0) }
                }
                guard decoder.isComplete else { return "answer \(index): chunked body truncated" }
                offset += used
            } catch {
                return "answer \(index): malformed chunked body (\(error))"
            }
        case .untilClose:
            offset = output.count
        }
        let closes = head.headers.hasToken("Connection", "close")
        if let refusal = want.refusal {
            if head.status != refusal { return "answer \(index): \(head.status), expected refusal \(refusal)" }
            if !closes { return "answer \(index): refusal \(refusal) without Connection: close" }
            if want.method != "HEAD" && !body.starts(with: Array("{\"error\":\"".utf8)) {
                return "answer \(index): refusal body is not the JSON error"
            }
        } else if ![200, 400, 413, 500].contains(head.status) {
            return "answer \(index): status \(head.status) from the handler"
        }
        index += 1
        if closes && offset < output.count { return "answer \(index - 1) announced close, \(output.count - offset) bytes follow" }
    }
    if index != expected.count { return "\(index) answers, expected \(expected.count): \(expected)" }
    return nil
}

/// One fuzz connection over a socketpair: the server end is handed to a listener (the real
/// `HTTPConnection`), the test end writes the input in pieces and reads until the server closes.
struct SocketpairExchange {
    /// How long the server may take to close after the client's EOF (a hang, not a timing check).
    static let closeTimeout: Int32 = 10_000

    /// `readLate`: after its EOF, the client lets the server fill the socket before reading, so the
    /// answers back up and the connection pauses and resumes.
    static func run(_ input: [UInt8], pieces: [Int], readLate: Bool, on listener: Listener) -> Result<[UInt8], RawClientError> {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            return .failure(RawClientError(what: "socketpair", errno: errno))
        }
        let client = fds[0], serverEnd = fds[1]
        defer { close(client) }
        // The smallest the kernel allows: a few pipelined answers fill it (the client reads only at the end).
        Sockets.setOption(serverEnd, level: SOL_SOCKET, name: SO_SNDBUF, value: 1)
        listener.loop.execute {
            listener.server.openConnections.wrappingAdd(1, ordering: .relaxed)
            listener.adopt(serverEnd, peer: PeerAddress(ip: "127.0.0.1", port: 0))
        }
        // Writes the pieces; between them, waits (briefly) until the server has read what was sent,
        // so its parser and state machine really see the input cut at those points.
        var offset = 0
        for (i, end) in pieces.enumerated() {
            if offset < end, !sendAll(client, input[offset..<end]) { break }
            offset = end
            if i < pieces.count - 1 { awaitConsumed(client) }
        }
        shutdown(client, Int32(SHUT_WR))
        if readLate { awaitQuiet(client) }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            var pfd = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, closeTimeout)
            if ready == 0 { return .failure(RawClientError(what: "no close within 10 s of the client's EOF")) }
            if ready < 0 { if errno == EINTR { continue }; return .failure(RawClientError(what: "poll", errno: errno)) }
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress!, $0.count, 0) }
            if n > 0 { output.append(contentsOf: buffer[0..<n]); continue }
            if n < 0 && errno == EINTR { continue }
            // 0: the server closed. A reset (the server closed with our bytes unread) ends it too.
            return .success(output)
        }
    }

    private static func sendAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 { if errno == EINTR { continue }; return false }
            sent += n
        }
        return true
    }

    /// Until no more bytes arrive for a while (FIONREAD stops growing), for at most ~3 ms.
    private static func awaitQuiet(_ fd: Int32) {
        let start = EventLoop.monotonicNow()
        var available: Int32 = 0, last: Int32 = -1, unchanged = 0
        while ioctl(fd, UInt(FIONREAD), &available) == 0 && unchanged < 100 && EventLoop.monotonicNow() &- start < 3_000_000 {
            unchanged = available == last ? unchanged + 1 : 0
            last = available
            sched_yield()
        }
    }

    /// Until the peer has read everything sent (TIOCOUTQ), for at most ~2 ms: a server busy with
    /// a request does not read meanwhile, and then the pieces simply arrive together.
    private static func awaitConsumed(_ fd: Int32) {
        let start = EventLoop.monotonicNow()
        var queued: Int32 = 0
        while ioctl(fd, UInt(TIOCOUTQ), &queued) == 0 && queued > 0 && EventLoop.monotonicNow() &- start < 2_000_000 {
            sched_yield()
        }
    }
}

@Suite("Connection fuzzing (seeded: FUZZ_SEED, FUZZ_ITERATIONS)")
struct ConnectionFuzzTests {
    static let seeds: [[UInt8]] = [
        wire("GET /text HTTP/1.1\r\nHost: t\r\n\r\n"),
        wire("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"),
        wire("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n0\r\nT: v\r\n\r\n"),
        wire("GET /immediate HTTP/1.1\r\nHost: t\r\n\r\n"),
        wire("HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n"),
        wire("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"),
        wire("PUT /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"),
        wire("POST /ignore HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
        wire("GET /fixed HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
        wire("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi"),
        wire("GET /x?q=1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
        wire("OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n"),
        wire("GET /fixed HTTP/1.0\r\n\r\n"),
        wire("\r\nPOST /immediate HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nbody"),
    ]

    /// 1–6 pipelined seed requests, mutated (one input in ten is left valid).
    static func input(using rng: inout SplitMix64) -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 1...6, using: &rng) {
            bytes += seeds[Int.random(in: seeds.indices, using: &rng)]
        }
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: return bytes
        case 1: return Mutator.mutate(Mutator.mutate(bytes, using: &rng), using: &rng)
        default: return Mutator.mutate(bytes, using: &rng)
        }
    }

    /// Cut points: the whole input at once half of the time, else 1–3 random cuts.
    static func pieces(_ count: Int, using rng: inout SplitMix64) -> [Int] {
        guard count > 1, Bool.random(using: &rng) else { return [count] }
        var cuts = (0..<Int.random(in: 1...3, using: &rng)).map { _ in Int.random(in: 1..<count, using: &rng) }
        cuts.sort()
        return cuts + [count]
    }

    static func configuration() -> HTTPServerConfiguration {
        var config = TestServer.configuration()
        config.maxHeadBytes = 2 * 1024  // mutations that duplicate runs reach the 431 limit too
        // With the small socket buffer of `SocketpairExchange`, a few pipelined answers fill the
        // socket and pass the high watermark: pausing and resuming are in the state space too.
        config.writeHighWatermark = 128
        config.writeLowWatermark = 64
        return config
    }

    @Test("Mutated pipelined byte streams (25% of FUZZ_ITERATIONS) through the real connection: no crash, every answer well-formed and expected, nothing after a close")
    func mutatedConnections() async throws {
        let configuration = Self.configuration()
        let server = HTTPServer(configuration: configuration, handler: FuzzHandler(),
                                logger: Logger(label: "test.fuzz") { _ in SwiftLogNoOpLogHandler() })
        try server.start()
        let iterations = FuzzRun.iterations(share: 0.25)
        // Two workers, one per loop, each on a thread of its own (the socket calls block).
        let problems: [String] = await withTaskGroup(of: [String].self) { group in
            for worker in 0..<2 {
                let listener = server.listeners[worker % server.listeners.count]
                group.addTask {
                    await withCheckedContinuation { continuation in
                        DispatchQueue(label: "test.fuzz.\(worker)").async {
                            continuation.resume(returning: Self.fuzz(worker: worker, of: 2, iterations: iterations,
                                                                     listener: listener, configuration: configuration))
                        }
                    }
                }
            }
            var all: [String] = []
            for await found in group { all += found }
            return all
        }
        #expect(problems.isEmpty, "\(problems.prefix(5)); \(FuzzRun.reproduce)")
        // The server survived all of it and still answers.
        let client = try await RawClient(port: server.localPort)
        try await client.send(get("/still-alive"))
        #expect(try await client.readResponse().text == "/still-alive")
        await server.shutdown(graceNanoseconds: 0)
    }

    static func fuzz(worker: Int, of workers: Int, iterations: Int, listener: Listener,
                     configuration: HTTPServerConfiguration) -> [String] {
        var rng = FuzzRun.generator(0x636F_6E6E_6563_7400 &+ UInt64(worker))
        var problems: [String] = []
        for iteration in stride(from: worker, to: iterations, by: workers) {
            let bytes = input(using: &rng)
            let cuts = pieces(bytes.count, using: &rng)
            let readLate = Int.random(in: 0..<4, using: &rng) == 0
            let expected = ExpectedAnswer.of(bytes, configuration: configuration)
            switch SocketpairExchange.run(bytes, pieces: cuts, readLate: readLate, on: listener) {
            case .failure(let error):
                problems.append("#\(iteration) \(error) for \(String(decoding: bytes, as: UTF8.self).debugDescription)")
            case .success(let output):
                if let problem = answerProblems(output, expected: expected) {
                    problems.append("#\(iteration) cut at \(cuts): \(problem) for "
                                    + "\(String(decoding: bytes, as: UTF8.self).debugDescription) → "
                                    + "\(String(decoding: output.prefix(600), as: UTF8.self).debugDescription)")
                }
            }
            if problems.count >= 5 { break }
        }
        return problems
    }
}
