import Testing
@testable import HTTPServer

/// Head timeout 500 ms, idle 1 s; the sweeper runs every 250 ms. Upper bounds are very loose because
/// on a loaded 2-core CI machine (the whole suite runs in parallel) a thread may be scheduled
/// seconds late (14 s was seen once): they only tell the short timeout from the 30 s default the
/// other suites' servers use. Lower bounds prove nothing fires early.
@Suite("Server: timeouts")
struct TimeoutTests {
    @Test("A connection that sends no head gets 408 and is closed (RFC 9110 §15.5.9)")
    func headTimeout() async throws {
        try await withServer(TestServer.shortTimeouts) { server in
            let start = now()
            let client = try await server.client()
            let response = try await client.readResponse(timeout: 28)
            let elapsed = now() - start
            #expect(response.status == 408)
            #expect(response.headers.tokens("Connection").contains("close"))
            #expect(elapsed >= 0.45 && elapsed < 25, "408 after \(elapsed) s")
            #expect(try await client.waitForClose(timeout: 3))
        }
    }

    @Test("Half a head and then nothing: 408 within the head timeout (slowloris)")
    func halfHeadTimeout() async throws {
        try await withServer(TestServer.shortTimeouts) { server in
            let start = now()
            let client = try await server.client()
            try await client.send("GET /slowloris HTTP/1.1\r\nHost: t\r\nX-A: ")
            let response = try await client.readResponse(timeout: 28)
            #expect(response.status == 408)
            #expect(now() - start < 25)
            #expect(try await client.waitForClose(timeout: 3))
            #expect(server.log.calls("/slowloris") == 0)
        }
    }

    @Test("A head trickled byte by byte still times out: the deadline is per head, not per read")
    func trickledHeadTimeout() async throws {
        try await withServer(TestServer.shortTimeouts) { server in
            let client = try await server.client()
            let start = now()
            var got408 = false
            for byte in Array("GET /trickle HTTP/1.1\r\nHost: t\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".utf8) {
                do { try await client.send([byte]) } catch { break }
                if try await client.receiveOnce(timeout: 0.05) != nil { got408 = true; break }
            }
            if !got408 { _ = try await client.receiveOnce(timeout: 25) }
            #expect(String(decoding: client.pending, as: UTF8.self).hasPrefix("HTTP/1.1 408"))
            #expect(now() - start < 28)
        }
    }

    @Test("An idle keep-alive connection is closed without a response")
    func idleTimeout() async throws {
        try await withServer(TestServer.shortIdle) { server in
            let client = try await server.client()
            let start = now()
            try await client.send(get("/text"))
            #expect(try await client.readResponse().status == 200)
            #expect(try await client.waitForClose(timeout: 25))
            let elapsed = now() - start
            #expect(client.pending.isEmpty, "unexpected bytes: \(String(decoding: client.pending, as: UTF8.self))")
            #expect(elapsed >= 0.95 && elapsed < 25, "closed after \(elapsed) s")
        }
    }
}
