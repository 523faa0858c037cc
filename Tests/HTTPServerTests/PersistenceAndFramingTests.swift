#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import HTTPServer

@Suite("Server: persistent connections and message framing (RFC 9112 §6, §7, §9)")
struct PersistenceAndFramingTests {
    @Test("Two requests on one connection (RFC 9112 §9.3 persistence)")
    func keepAlive() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send(get("/text"))
            let first = try await client.readResponse()
            #expect(first.status == 200)
            #expect(first.text == "hello world")
            #expect(first.headers["Connection"] == nil)
            try await client.send(get("/second"))
            let second = try await client.readResponse()
            #expect(second.text == "/second")
        }
    }

    @Test("A request sent together with the client's FIN is answered, then the connection closes at once (RFC 9112 §9.6)")
    func halfCloseAfterRequest() async throws {
        // An idle timeout far beyond the wait below: a close within it was caused by the EOF, not by
        // waiting the idle timeout out (and no elapsed-time threshold is needed).
        var configuration = TestServer.configuration()
        configuration.idleTimeoutNanoseconds = 300_000_000_000
        try await withServer(configuration) { server in
            let client = try await server.client()
            try await client.send(get("/text"))
            client.shutdownWrite()
            #expect(try await client.readResponse().text == "hello world")
            #expect(try await client.waitForClose(timeout: 30))
        }
    }

    @Test("Three pipelined requests in one write are answered in order (RFC 9112 §9.3.2)")
    func pipelining() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send(get("/a") + "POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\n\r\nxyz" + get("/immediate"))
            #expect(try await client.readResponse().text == "/a")
            #expect(try await client.readResponse().text == "xyz")
            #expect(try await client.readResponse().text == "immediate")
            #expect(client.pending.isEmpty)
        }
    }

    @Test("A chunked request body, split across writes, is decoded (RFC 9112 §7.1)")
    func chunkedRequestBody() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            try await Task.sleep(nanoseconds: 30_000_000)
            try await client.send("1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\nTrailer: x\r\n\r\n")
            let response = try await client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "hello world!")
            try await client.send(get("/after"))
            #expect(try await client.readResponse().text == "/after")
        }
    }

    @Test("A streamed response without a length is chunked and decodes to the bytes written (RFC 9112 §7.1)")
    func chunkedResponse() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send(get("/stream?n=7&size=1000"))
            let response = try await client.readResponse()
            #expect(response.headers["Transfer-Encoding"] == "chunked")
            #expect(response.headers["Content-Length"] == nil)
            #expect(patternMismatch(response.body, expectedCount: 7000) == nil)
            try await client.send(get("/after"))
            #expect(try await client.readResponse().text == "/after")
        }
    }

    @Test("A streamed response with a declared length carries Content-Length (RFC 9112 §6.2)")
    func contentLengthResponse() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send(get("/fixed?size=3500"))
            let response = try await client.readResponse()
            #expect(response.headers["Content-Length"] == "3500")
            #expect(response.headers["Transfer-Encoding"] == nil)
            #expect(patternMismatch(response.body, expectedCount: 3500) == nil)
        }
    }

    @Test("HEAD gets Content-Length and no body (RFC 9110 §9.3.2)")
    func headHasNoBody() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("HEAD /text HTTP/1.1\r\nHost: test\r\n\r\n")
            let response = try await client.readResponse(method: "HEAD")
            #expect(response.headers["Content-Length"] == "11")
            #expect(response.body.isEmpty)
            // Any body bytes would now be in front of the next answer and break its status line.
            try await client.send(get("/next"))
            #expect(try await client.readResponse().text == "/next")
        }
    }

    @Test("HTTP/1.0 without keep-alive: the connection closes after the response (RFC 9112 §9.3)")
    func http10Closes() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("GET /text HTTP/1.0\r\n\r\n")
            let response = try await client.readResponse()
            #expect(response.text == "hello world")
            #expect(try await client.waitForClose(timeout: 2))
        }
    }

    @Test("HTTP/1.0 with Connection: keep-alive stays open and says so (RFC 9112 §C.2.2)")
    func http10KeepAlive() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("GET /text HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let first = try await client.readResponse()
            #expect(first.text == "hello world")
            // An HTTP/1.0 client assumes close unless the response announces keep-alive.
            #expect(first.headers.tokens("Connection").contains("keep-alive"))
            try await client.send("GET /again HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            #expect(try await client.readResponse().text == "/again")
        }
    }

    @Test("A small response leaves in one segment: one recv gets head and body; TCP_NODELAY is on")
    func responseInOneSegment() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send(get("/text"))
            let bytes = try #require(try await client.receiveOnce(timeout: 2))
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(text.hasSuffix("\r\n\r\nhello world"))

            let fds = await acceptedSockets(of: server.server)
            #expect(fds.count == 1)
            for fd in fds {
                var value: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                #expect(getsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length) == 0)
                #expect(value != 0)
            }
        }
    }
}

/// The file descriptors of the server's open connections, read on their loops.
func acceptedSockets(of server: HTTPServer) async -> [Int32] {
    var all: [Int32] = []
    for listener in server.listeners {
        let fds = await withCheckedContinuation { (continuation: CheckedContinuation<[Int32], Never>) in
            listener.loop.execute { continuation.resume(returning: listener.connections.values.map(\.fd)) }
        }
        all += fds
    }
    return all
}
