import Testing
@testable import HTTPServer

@Suite("Server: Expect: 100-continue and unread request bodies")
struct ExpectAndDrainTests {
    @Test("100 Continue is sent when the handler reads the body (RFC 9110 §10.1.1)")
    func continueWhenBodyIsRead() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("POST /echo HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            let interim = try await client.readResponse(skipInterim: false)
            #expect(interim.status == 100)
            try await client.send("hello")
            let response = try await client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "hello")
            try await client.send(get("/after"))
            #expect(try await client.readResponse().text == "/after")
        }
    }

    @Test("No 100 Continue when the handler answers without reading; the connection then closes (RFC 9110 §10.1.1)")
    func noContinueWhenBodyIsIgnored() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("POST /ignore HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            let response = try await client.readResponse(skipInterim: false)
            #expect(response.status == 200)
            #expect(response.text == "ignored")
            // The client may or may not send the body now: the server cannot tell, so it must close.
            #expect(response.headers.tokens("Connection").contains("close"))
            #expect(try await client.waitForClose(timeout: 3))
            #expect(!String(decoding: client.pending, as: UTF8.self).contains("100 Continue"))
        }
    }

    @Test("No 100 Continue inside a response whose head was already sent (RFC 9110 §15.2)")
    func noContinueAfterFinalHead() async throws {
        try await withServer { server in
            let client = try await server.client()
            // The handler starts a chunked answer, then reads the body: an interim head written now
            // would land inside the chunked body and corrupt it.
            try await client.send("POST /head-then-echo HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
            _ = try await client.receiveOnce(timeout: 2)
            #expect(String(decoding: client.pending, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK\r\n"))
            try await client.send("abc")
            let response = try await client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "abc")
        }
    }

    @Test("A small ignored body is discarded and the next request parses from its first byte (RFC 9112 §6.3)")
    func smallIgnoredBodyIsDrained() async throws {
        try await withServer { server in
            let client = try await server.client()
            // The body looks like a request: if it were not skipped, /smuggled would run.
            let body = get("/smuggled")
            try await client.send("POST /ignore HTTP/1.1\r\nHost: test\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body + get("/count"))
            let first = try await client.readResponse()
            #expect(first.text == "ignored")
            #expect(first.headers["Connection"] == nil)
            #expect(try await client.readResponse().text == "counted")
            #expect(server.log.calls("/smuggled") == 0)
            #expect(server.log.calls("/count") == 1)
        }
    }

    @Test("A small ignored chunked body is discarded and the connection stays usable")
    func smallIgnoredChunkedBodyIsDrained() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("POST /ignore HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
            #expect(try await client.readResponse().text == "ignored")
            try await client.send("4\r\nabcd\r\n0\r\n\r\n" + get("/count"))
            #expect(try await client.readResponse().text == "counted")
        }
    }

    @Test("A large ignored body closes the connection instead of being drained")
    func largeIgnoredBodyCloses() async throws {
        try await withServer { server in
            let client = try await server.client()
            let size = 512 * 1024
            try await client.send("POST /ignore HTTP/1.1\r\nHost: test\r\nContent-Length: \(size)\r\n\r\n")
            try await client.send([UInt8](repeating: 0x61, count: 8 * 1024))
            let response = try await client.readResponse()
            #expect(response.text == "ignored")
            #expect(response.headers.tokens("Connection").contains("close"))
            #expect(try await client.waitForClose(timeout: 3))
        }
    }

    @Test("A large ignored chunked body closes the connection once the drain budget is spent")
    func largeIgnoredChunkedBodyCloses() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("POST /ignore HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
            #expect(try await client.readResponse().text == "ignored")
            // 512 KiB of chunks: far above maxDrainBytes (64 KiB), below maxBodyBytes (1 MiB).
            let chunk = Array("4000\r\n".utf8) + [UInt8](repeating: 0x62, count: 0x4000) + Array("\r\n".utf8)
            var sentAll = true
            for _ in 0..<32 {
                do { try await client.send(chunk) } catch { sentAll = false; break }
            }
            _ = sentAll
            #expect(try await client.waitForClose(timeout: 3))
        }
    }
}
