import Logging
import Synchronization
import Testing
@testable import EventLoops
@testable import HTTP1
@testable import HTTPServer
import TestSupport

/// `HTTPResponseWriter.switchProtocols`: the `101` goes out, the socket becomes a tunnel endpoint
/// with the bytes the client sent behind its request, the exchange is over, and server shutdown
/// asks the endpoint to end.
@Suite struct SwitchProtocolsTests {
    /// Echoes what it reads; keeps itself alive until its endpoint closes.
    final class Echo: TunnelEndpointHandler {
        let endpoint: any TunnelEndpoint
        private var keepAlive: Echo?
        let outcomes: Outcomes

        init(_ endpoint: any TunnelEndpoint, outcomes: Outcomes) {
            self.endpoint = endpoint
            self.outcomes = outcomes
            keepAlive = self
            endpoint.attach(self)
        }

        func endpointReadable(_ endpoint: any TunnelEndpoint) {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                switch buffer.withUnsafeMutableBytes({ endpoint.receive(into: $0) }) {
                case .bytes(let n): _ = buffer.withUnsafeBytes { endpoint.send(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                case .wouldBlock: return
                case .closed: return finish()
                }
            }
        }

        func endpointWritable(_ endpoint: any TunnelEndpoint) {}

        func endpointEnded(_ endpoint: any TunnelEndpoint, graceful: Bool) {
            if graceful { outcomes.ended.withLock { $0 = true } }
            finish()
        }

        private func finish() {
            endpoint.close()
            keepAlive = nil
        }
    }

    final class Outcomes: Sendable {
        let errors = Mutex<[String: HTTPWriteError]>([:])
        let ended = Mutex(false)
    }

    struct Handler: TaskHTTPHandler {
        let outcomes: Outcomes

        func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async {
            let path = String(request.head.path)
            do {
                if path == "/after-head" { try await writer.writeHead(HTTPResponseHead(status: 200), contentLength: 0) }
                let endpoint = try await writer.switchProtocols(HTTPResponseHead(status: 101, headers: ["Upgrade": "echo"]))
                _ = Echo(endpoint, outcomes: outcomes)
            } catch {
                outcomes.errors.withLock { $0[path] = error }
                if !writer.headWritten {
                    await writer.respond(HTTPResponse(status: 400, body: "cannot switch"))
                }
            }
        }
    }

    func withSwitchingServer(_ body: (HTTPServer, Outcomes) async throws -> Void) async throws {
        let outcomes = Outcomes()
        var configuration = TestServer.configuration()
        configuration.loopCount = 1
        let server = HTTPServer(configuration: configuration, handler: Handler(outcomes: outcomes),
                                logger: Logger(label: "test.switch") { _ in SwiftLogNoOpLogHandler() })
        try server.start()
        do { try await body(server, outcomes) } catch {
            await server.shutdown(graceNanoseconds: 0)
            throw error
        }
        await server.shutdown(graceNanoseconds: 0)
    }

    /// Reads until `pending` holds `count` bytes (or 10 s pass).
    func read(_ client: RawClient, atLeast count: Int) async throws -> String {
        let deadline = monotonicSeconds() + 10
        while client.pending.count < count && monotonicSeconds() < deadline {
            guard try await client.receiveOnce(timeout: deadline - monotonicSeconds()) != nil, !client.sawEOF else { break }
        }
        return String(decoding: client.pending, as: UTF8.self)
    }

    @Test func theSocketBecomesATunnelWithTheBytesSentBehindTheRequest() async throws {
        try await withSwitchingServer { server, outcomes in
            let client = try await RawClient(port: server.localPort)
            try await client.send("GET /switch HTTP/1.1\r\nHost: test\r\n\r\nearly")
            let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n"
            #expect(try await read(client, atLeast: head.utf8.count + 5) == head + "early")
            try await client.send("more")
            #expect(try await read(client, atLeast: head.utf8.count + 9) == head + "earlymore")
            #expect(server.openConnections.load(ordering: .relaxed) == 1)

            // Shutdown asks the endpoint to end (gracefully), and does not wait for the tunnel.
            let started = monotonicSeconds()
            await server.shutdown(graceNanoseconds: 20_000_000_000)
            #expect(monotonicSeconds() - started < 10)
            #expect(try await client.waitForClose(timeout: 10))
            #expect(outcomes.ended.withLock { $0 })
            #expect(server.openConnections.load(ordering: .relaxed) == 0)
        }
    }

    @Test func noSwitchOnceAHeadWasWrittenOrWithABodyUnread() async throws {
        try await withSwitchingServer { server, outcomes in
            let client = try await RawClient(port: server.localPort)
            try await client.send("GET /after-head HTTP/1.1\r\nHost: test\r\n\r\n")
            #expect(try await client.readResponse().status == 200)
            try await client.send("POST /with-body HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello")
            #expect(try await client.readResponse().status == 400)
            let errors = outcomes.errors.withLock { $0 }
            #expect(errors["/after-head"] == .invalidState("head already written"))
            #expect(errors["/with-body"] == .invalidState("the exchange cannot switch protocols"))
        }
    }
}

private func monotonicSeconds() -> Double { Double(EventLoop.monotonicNow()) / 1e9 }
