#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Testing
@testable import HTTP1
@testable import HTTPServer
import TestSupport

/// One connection's back-pressure state, read on its loop.
struct ConnectionSnapshot: Sendable {
    var state: HTTPConnection.State
    var inputPaused: Bool
    var unsent: Int
    var sendDeadline: UInt64
    var awaitingBody: Bool
    /// Allocated read-buffer and output capacities (0 while released).
    var inputCapacity: Int
    var outputCapacity: Int
}

extension TestServer {
    /// Every open connection's state, read on the loop that owns it.
    func connectionSnapshots() async -> [ConnectionSnapshot] {
        var all: [ConnectionSnapshot] = []
        for listener in server.listeners {
            all += await withCheckedContinuation { continuation in
                listener.loop.execute {
                    continuation.resume(returning: listener.connections.values.map {
                        ConnectionSnapshot(state: $0.state, inputPaused: $0.inputPaused,
                                           unsent: $0.unsentOutputCount, sendDeadline: $0.sendDeadline,
                                           awaitingBody: $0.isAwaitingBody,
                                           inputCapacity: $0.inputCapacity, outputCapacity: $0.outputCapacity)
                    })
                }
            }
        }
        return all
    }

    /// Polls the connections (10 ms apart) until one satisfies `condition`; returns it.
    func awaitConnection(timeout: Double = 30, _ condition: (ConnectionSnapshot) -> Bool) async -> ConnectionSnapshot? {
        let deadline = now() + timeout
        while now() < deadline {
            if let match = await connectionSnapshots().first(where: condition) { return match }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return nil
    }
}

/// Sends on a socket from a thread of its own: a client that pipelines more than the server will
/// read blocks in `send`, and must not block the test's reads or the cooperative pool meanwhile.
func sendInBackground(_ socket: BlockingSocket, _ bytes: [UInt8]) async -> Task<Bool, Never> {
    Task {
        await withCheckedContinuation { continuation in
            DispatchQueue(label: "test.pipeline-sender").async {
                continuation.resume(returning: (try? socket.send(bytes)) != nil)
            }
        }
    }
}

/// Reads `count` answers with a `Content-Length` body from `socket` on a thread of its own, checking
/// each is a 200 with `bodySize` bytes. Returns the problem found, nil when all arrived. (Parses in
/// place: `readResponse` moves its whole buffer per answer, too slow for tens of thousands.)
func readAnswers(_ socket: BlockingSocket, count: Int, bodySize: Int, timeout: Double = 20) async -> String? {
    await withCheckedContinuation { continuation in
        DispatchQueue(label: "test.pipeline-reader").async {
            var buffer: [UInt8] = []
            var index = 0
            var answered = 0
            let deadline = now() + timeout
            var chunk = [UInt8](repeating: 0, count: 256 * 1024)
            while answered < count {
                var parser = ResponseHeadParser()
                let parsed = buffer.withUnsafeBytes { raw -> (HTTPResponseHead, Int)? in
                    let rest = UnsafeRawBufferPointer(rebasing: raw[index...])
                    guard case .complete(let head, let consumed)? = try? parser.parse(rest) else { return nil }
                    return (head, consumed)
                }
                if let (head, consumed) = parsed, let length = head.headers["Content-Length"].flatMap({ Int($0) }),
                   buffer.count - index >= consumed + length {
                    if head.status != 200 || length != bodySize {
                        continuation.resume(returning: "answer \(answered): \(head.status) with \(length) bytes")
                        return
                    }
                    index += consumed + length
                    answered += 1
                    if index > 1024 * 1024 { buffer.removeFirst(index); index = 0 }
                    continue
                }
                var pfd = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
                let left = deadline - now()
                guard left > 0, poll(&pfd, 1, Int32(left * 1000)) == 1 else {
                    continuation.resume(returning: "timed out after \(answered) of \(count) answers")
                    return
                }
                let n = chunk.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress!, $0.count, 0) }
                if n <= 0 {
                    continuation.resume(returning: "connection ended after \(answered) of \(count) answers")
                    return
                }
                buffer.append(contentsOf: chunk[0..<n])
            }
            continuation.resume(returning: nil)
        }
    }
}

func pipelined(_ request: String, count: Int) -> [UInt8] {
    Array(String(repeating: request, count: count).utf8)
}

@Suite("Server: a client that pipelines requests without reading the answers")
struct PipeliningBackPressureTests {
    static func smallWatermarks(progressTimeout: UInt64 = 30_000_000_000) -> HTTPServerConfiguration {
        var config = TestServer.configuration()
        config.writeHighWatermark = 16 * 1024
        config.writeLowWatermark = 8 * 1024
        config.progressTimeoutNanoseconds = progressTimeout
        return config
    }

    @Test("Reading pauses above the high watermark and resumes below the low one; every request is answered in order",
          arguments: ["/big?size=8192", "/immediate-4k"])
    func pauseAndResume(path: String) async throws {
        try await withServer(Self.smallWatermarks()) { server in
            // A small receive window: the kernel holds little of the answers, the server the rest.
            let socket = try BlockingSocket(port: server.port, receiveBuffer: 4096)
            let count = 20_000
            let sender = await sendInBackground(socket, pipelined(get(path), count: count))

            let paused = await server.awaitConnection { $0.inputPaused }
            #expect(paused != nil, "the connection never stopped reading")
            let handled = server.log.calls(String(path.prefix { $0 != "?" }))
            #expect(handled < count, "all \(count) requests were parsed by a connection whose client reads nothing")
            if let paused {
                // The high watermark plus the one answer that crossed it.
                #expect(paused.unsent <= 16 * 1024 + 8300, "unsent \(paused.unsent)")
                #expect(paused.state == .awaitingHead)
                #expect(paused.sendDeadline != 0)
            }

            // Now the client reads: everything is answered, in order. After the last send no new
            // readiness edge comes, so this also shows that resuming parses what is already buffered.
            let problem = await readAnswers(socket, count: count, bodySize: path == "/immediate-4k" ? 4096 : 8192)
            #expect(problem == nil, "\(problem ?? "")")
            #expect(await sender.value)
            #expect(await server.awaitConnection { !$0.inputPaused && $0.unsent == 0 && $0.state == .awaitingHead } != nil)
        }
    }

    @Test("New requests do not extend the send-progress deadline: a client that sends but never reads is cut off")
    func progressDeadlineNotReArmedByRequests() async throws {
        var config = TestServer.configuration()
        // No pause here, so every request is parsed and answered into the stalled output.
        config.writeHighWatermark = 64 * 1024 * 1024
        config.writeLowWatermark = 32 * 1024 * 1024
        config.progressTimeoutNanoseconds = 1_000_000_000
        try await withServer(config) { server in
            let socket = try BlockingSocket(port: server.port, receiveBuffer: 4096)
            // More than the socket buffers take, so the output stalls at once.
            try socket.send(get("/big?size=\(8 * 1024 * 1024)"))
            // Seen stalled, or already cut: on a loaded machine the first look may come after the
            // one-second deadline has done its work (this test once waited 30 s for a connection
            // that was gone).
            let stalled = await server.awaitConnection(timeout: 5) { $0.sendDeadline != 0 }
            let alreadyCut = server.server.openConnections.load(ordering: .relaxed) == 0
            #expect(stalled != nil || alreadyCut)
            // A request every 20 ms, for up to 10 s (ten times the progress timeout). Each is answered
            // into the stalled output; the old code re-armed the deadline with each of them.
            var cutOff = false
            for i in 0..<500 {
                if (try? socket.send(get("/count"))) == nil { cutOff = true; break }
                try await Task.sleep(nanoseconds: 20_000_000)
                if server.server.openConnections.load(ordering: .relaxed) == 0 { cutOff = true; break }
                if i == 20 { #expect(server.log.calls("/count") > 1, "requests were not handled") }
            }
            #expect(cutOff, "a client that never reads kept its connection by sending requests")
        }
    }

    @Test("A large answer sent with its head in one call arrives whole through a small receive window, and the next one after it",
          arguments: [2048, 300_000, 6_000_000])
    func gatheredAnswer(size: Int) async throws {
        try await withServer { server in
            let socket = try BlockingSocket(port: server.port, receiveBuffer: 4096)
            try socket.send(get("/big?size=\(size)") + get("/big?size=\(size)"))
            let problem = await readAnswers(socket, count: 2, bodySize: size)
            #expect(problem == nil, "\(problem ?? "")")
        }
    }

    @Test("A paused client that never reads is disconnected by the send-progress timeout")
    func pausedClientIsDisconnected() async throws {
        try await withServer(Self.smallWatermarks(progressTimeout: 1_000_000_000)) { server in
            let socket = try BlockingSocket(port: server.port, receiveBuffer: 4096)
            let sender = await sendInBackground(socket, pipelined(get("/immediate-4k"), count: 20_000))
            // The pause lasts the 1 s progress timeout: on a loaded machine the probe can miss it, and
            // then the connection is already gone, which is what this test is about.
            let paused = await server.awaitConnection { $0.inputPaused } != nil
            let closed = await eventually(timeout: 10) { server.server.openConnections.load(ordering: .relaxed) == 0 }
            #expect(closed, "paused: \(paused)")
            // The server closed with our requests unread: the kernel resets, the blocked send fails.
            _ = await sender.value
        }
    }

    @Test("A request handed over while the previous handler run has not returned is not lost (50 pipelined)")
    func handOverWhileHandlerBusy() async throws {
        try await withServer { server in
            let client = try await server.client()
            var wire = ""
            for i in 0..<50 { wire += get("/answer-then-work?i=\(i)") }
            try await client.send(wire)
            for i in 0..<50 {
                #expect(try await client.readResponse().text == "/answer-then-work?i=\(i)")
            }
            #expect(server.log.calls("/answer-then-work") == 50)
        }
    }
}
