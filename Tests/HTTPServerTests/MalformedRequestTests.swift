import Testing
@testable import HTTPServer
import TestSupport

/// Sends `request` on a fresh connection and expects `status`, `Connection: close` and the close.
private func expectRefusal(_ server: TestServer, _ request: String, status: Int,
                           sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let client = try await server.client()
    try await client.send(request)
    let response = try await client.readResponse()
    #expect(response.status == status, sourceLocation: sourceLocation)
    #expect(response.headers.tokens("Connection").contains("close"), sourceLocation: sourceLocation)
    #expect(try await client.waitForClose(timeout: 3), "connection stays open", sourceLocation: sourceLocation)
}

@Suite("Server: malformed and oversized requests")
struct MalformedRequestTests {
    @Test("Content-Length with Transfer-Encoding → 400 and close (RFC 9112 §6.1)")
    func contentLengthWithTransferEncoding() async throws {
        try await withServer { server in
            try await expectRefusal(server, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400)
            #expect(server.log.calls("/echo") == 0)
        }
    }

    @Test("Two different Content-Lengths → 400; the request behind them never runs (RFC 9112 §6.3 item 5)")
    func conflictingContentLengths() async throws {
        try await withServer { server in
            // With length 5 the body ends before "GET /count"; with 0 the smuggled request would run.
            let request = "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello" + get("/count")
            try await expectRefusal(server, request, status: 400)
            try await Task.sleep(nanoseconds: 50_000_000)
            #expect(server.log.calls("/echo") == 0)
            #expect(server.log.calls("/count") == 0)
        }
    }

    @Test("Obsolete line folding → 400 (RFC 9112 §5.2)")
    func obsFold() async throws {
        try await withServer { server in
            try await expectRefusal(server, "GET / HTTP/1.1\r\nHost: t\r\nX-A: one\r\n two\r\n\r\n", status: 400)
        }
    }

    @Test("Whitespace between field name and colon → 400 (RFC 9112 §5.1)")
    func spaceBeforeColon() async throws {
        try await withServer { server in
            try await expectRefusal(server, "GET / HTTP/1.1\r\nHost : t\r\n\r\n", status: 400)
        }
    }

    @Test("A field line without a colon → 400 (RFC 9112 §5)")
    func missingColon() async throws {
        try await withServer { server in
            try await expectRefusal(server, "GET / HTTP/1.1\r\nHost: t\r\nNoColonHere\r\n\r\n", status: 400)
        }
    }

    @Test("A bare LF line ending → 400 (RFC 9112 §2.2)")
    func bareLF() async throws {
        try await withServer { server in
            try await expectRefusal(server, "GET / HTTP/1.1\r\nHost: t\nX-A: b\r\n\r\n", status: 400)
        }
    }

    @Test("HTTP/2.0 in the request line → 505 (RFC 9110 §15.6.6)")
    func unsupportedVersion() async throws {
        try await withServer { server in
            try await expectRefusal(server, "GET / HTTP/2.0\r\nHost: t\r\n\r\n", status: 505)
        }
    }

    @Test("A 20 KiB header → 431 (RFC 6585 §5)")
    func headerTooLarge() async throws {
        try await withServer { server in
            let big = String(repeating: "a", count: 20 * 1024)
            try await expectRefusal(server, "GET / HTTP/1.1\r\nHost: t\r\nX-Big: \(big)\r\n\r\n", status: 431)
        }
    }

    @Test("A Content-Length over maxBodyBytes → 413 before the handler runs (RFC 9110 §15.5.14)")
    func contentLengthTooLarge() async throws {
        try await withServer { server in
            try await expectRefusal(server, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(2 * 1024 * 1024)\r\n\r\nabc", status: 413)
            #expect(server.log.calls("/echo") == 0)
        }
    }

    @Test("A chunked body over maxBodyBytes: the handler gets .tooLarge, answers 413, the connection closes")
    func chunkedBodyTooLarge() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = Array("10000\r\n".utf8) + [UInt8](repeating: 0x63, count: 0x10000) + Array("\r\n".utf8)
            // 1.06 MiB in 64 KiB chunks; the server may stop reading (and reset) once it refused.
            for _ in 0..<17 {
                do { try await client.send(chunk) } catch { break }
            }
            let response = try await client.readResponse()
            #expect(response.status == 413)
            #expect(response.headers.tokens("Connection").contains("close"))
            #expect(server.log.bodyErrors == [.tooLarge(limit: 1024 * 1024)])
            #expect(try await client.waitForClose(timeout: 3))
        }
    }

    @Test("A malformed chunk size → 400 and close (RFC 9112 §7.1)")
    func malformedChunkSize() async throws {
        try await withServer { server in
            try await expectRefusal(server, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", status: 400)
            #expect(server.log.bodyErrors.count == 1)
        }
    }

    @Test("300 random payloads never crash the server; a normal request still works afterwards")
    func garbageFuzz() async throws {
        try await withServer { server in
            var random = SplitMix64(seed: 0x9E37_79B9_7F4A_7C15)
            let seeds = [get("/x"), "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                         "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"].map { Array($0.utf8) }
            var clients: [RawClient] = []
            for round in 0..<300 {
                let payload: [UInt8]
                if round % 2 == 0 {
                    payload = (0..<Int(random.next() % 2048 + 1)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                } else {
                    // Mutated valid requests reach deeper into the parser than pure noise.
                    payload = Mutator.mutate(seeds[Int(random.next() % UInt64(seeds.count))], using: &random)
                }
                let client = try await server.client()
                try? await client.send(payload)
                clients.append(client)
                // Keep at most 50 open; the rest close, with or without reading the answer.
                if clients.count > 50 {
                    let old = clients.removeFirst()
                    if round % 3 == 0 { _ = try? await old.receiveOnce(timeout: 0.05) }
                }
            }
            clients.removeAll()
            let client = try await server.client()
            try await client.send(get("/still-alive"))
            #expect(try await client.readResponse().text == "/still-alive")
        }
    }
}
