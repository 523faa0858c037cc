#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1
import Logging
import Synchronization
import Testing
@testable import HTTPServer
import TestSupport

@Suite("Server: shutdown, connection limits, concurrency, IPv6")
struct LifecycleTests {
    @Test("Graceful shutdown completes the request in flight, then stops; new connections are refused")
    func gracefulShutdown() async throws {
        let server = try TestServer()
        let client = try await server.client()
        try await client.send(get("/gate"))
        #expect(await eventually { server.log.calls("/gate") == 1 })
        // Held while the listeners close, so no other test's server is handed this port and answers
        // the attempts below (the kernel reuses a freed port for the next bind to port 0).
        let reservation = try PortReservation(port: server.port)
        defer { withExtendedLifetime(reservation) {} }
        let started = now()
        // A grace far beyond the check below: ending well inside it means the request, not the
        // grace period, ended the wait (no tight elapsed-time threshold on a loaded machine).
        let shutdown = Task { await server.server.shutdown(graceNanoseconds: 300_000_000_000) }
        // The listeners close first: new connections are refused while the request is in flight.
        var refused = false
        for _ in 0..<200 where !refused {
            do { _ = try await server.client() } catch { refused = true }
            if !refused { try await Task.sleep(nanoseconds: 10_000_000) }
        }
        #expect(refused)
        server.log.openGate()

        let response = try await client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "gate passed")
        #expect(response.headers.tokens("Connection").contains("close"))
        #expect(try await client.waitForClose(timeout: 3))
        client.close()
        await shutdown.value
        #expect(now() - started < 150, "shutdown waited for the grace period instead of the request")
        #expect(server.server.loops.isEmpty)
    }

    @Test("Graceful shutdown closes idle keep-alive connections at once")
    func shutdownClosesIdleConnections() async throws {
        let server = try TestServer()
        let client = try await server.client()
        try await client.send(get("/text"))
        _ = try await client.readResponse()
        let started = now()
        await server.server.shutdown(graceNanoseconds: 300_000_000_000)
        #expect(now() - started < 150, "shutdown waited for the grace period")
        #expect(try await client.waitForClose(timeout: 1))
    }

    @Test("Connections above maxConnections are closed at accept; the others keep working")
    func maxConnections() async throws {
        var config = TestServer.configuration()
        config.maxConnections = 2
        try await withServer(config) { server in
            let first = try await server.client(), second = try await server.client()
            for client in [first, second] {
                try await client.send(get("/text"))
                #expect(try await client.readResponse().status == 200)
            }
            let third = try await server.client()
            try? await third.send(get("/text"))
            #expect(try await third.waitForClose(timeout: 10))
            #expect(third.pending.isEmpty)
            try await first.send(get("/still"))
            #expect(try await first.readResponse().text == "/still")
            // A freed slot is available again.
            first.close()
            #expect(await eventually { server.server.openConnections.load(ordering: .relaxed) == 1 })
            let fourth = try await server.client()
            try await fourth.send(get("/fourth"))
            #expect(try await fourth.readResponse().text == "/fourth")
        }
    }

    @Test("1,000 concurrent connections each get their answer")
    func thousandConnections() async throws {
        // Client and server ends both live in this process.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < 4096 {
            limit.rlim_cur = min(limit.rlim_max, 4096)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        try await withServer { server in
            var clients: [RawClient] = []
            for i in 0..<1000 {
                let client = try await server.client()
                try await client.send(get("/c\(i)"))
                clients.append(client)
            }
            var answered = 0
            for (i, client) in clients.enumerated() {
                let response = try await client.readResponse(timeout: 10)
                if response.text == "/c\(i)" { answered += 1 }
            }
            #expect(answered == 1000)
        }
    }

    @Test("The server listens and answers on IPv6 ::1")
    func ipv6Loopback() async throws {
        try await withServer(TestServer.configuration(host: "::1")) { server in
            let client = try await server.client()
            try await client.send("GET /v6 HTTP/1.1\r\nHost: [::1]\r\n\r\n")
            #expect(try await client.readResponse().text == "/v6")
        }
    }

    @Test("A second server on a port already listened on fails to start instead of sharing it")
    func portInUse() async throws {
        try await withServer { first in
            var config = TestServer.configuration()
            config.port = first.port
            // SO_REUSEPORT on the loops' listeners would otherwise let the second join the first's
            // port and take part of its connections.
            #expect(throws: SocketError.self) { _ = try TestServer(config) }
            let client = try await first.client()
            try await client.send(get("/still-first"))
            #expect(try await client.readResponse().text == "/still-first")
        }
    }

    /// Asked once per loop; the handler made for a loop answers that loop's requests.
    private final class Made: Sendable {
        let loops = Mutex<[Int]>([])
    }

    private final class PerLoopHandler: TaskHTTPHandler, Sendable {
        let madeFor: Int?
        let made: Made
        init(madeFor: Int?, made: Made) {
            self.madeFor = madeFor
            self.made = made
        }
        func loopHandler(for loop: EventLoop) -> any HTTPHandler {
            made.loops.withLock { $0.append(loop.index) }
            return PerLoopHandler(madeFor: loop.index, made: made)
        }
        func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse? {
            let ranOn = EventLoop.current?.index
            return HTTPResponse(status: 200, body: "made-for=\(madeFor.map(String.init) ?? "none") ran-on=\(ranOn.map(String.init) ?? "none")")
        }
        func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async {}
    }

    @Test("Each loop's connections call the handler made for that loop (loopHandler(for:))")
    func perLoopHandlers() async throws {
        let made = Made()
        let server = HTTPServer(configuration: TestServer.configuration(), handler: PerLoopHandler(madeFor: nil, made: made),
                                logger: Logger(label: "test.http-server") { _ in SwiftLogNoOpLogHandler() })
        try server.start()
        #expect(made.loops.withLock { $0.sorted() } == [0, 1])
        var answers: Set<String> = []
        do {
            for _ in 0..<16 {
                let client = try await RawClient(port: server.localPort, host: "127.0.0.1")
                try await client.send(get("/which"))
                answers.insert(try await client.readResponse().text)
                client.close()
            }
        } catch {
            await server.shutdown(graceNanoseconds: 0)
            throw error
        }
        await server.shutdown(graceNanoseconds: 0)
        #expect(!answers.isEmpty)
        for answer in answers {
            #expect(answer == "made-for=0 ran-on=0" || answer == "made-for=1 ran-on=1", "\(answer)")
        }
    }
}
