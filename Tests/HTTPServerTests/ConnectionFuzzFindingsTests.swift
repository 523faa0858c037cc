import Dispatch
import Testing
@testable import HTTPServer

extension TestServer {
    /// Runs `body` while every loop thread is blocked, so that all it sends is already in the socket
    /// when the server looks again (one readiness edge for data and EOF together, deterministically).
    func withLoopsBlocked(_ body: () async throws -> Void) async rethrows {
        let release = DispatchSemaphore(value: 0)
        for loop in server.loops {
            await withCheckedContinuation { (blocked: CheckedContinuation<Void, Never>) in
                loop.execute {
                    blocked.resume()
                    release.wait()
                }
            }
        }
        do {
            try await body()
        } catch {
            for _ in server.loops { release.signal() }
            throw error
        }
        for _ in server.loops { release.signal() }
    }
}

/// Regression tests for what the connection fuzzer (`ConnectionFuzzTests`) found.
@Suite("Server: connection fuzzer findings")
struct ConnectionFuzzFindingsTests {
    @Test("A refused request after a HEAD gets its JSON body (it was left out, with its Content-Length sent)")
    func refusalAfterHead() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("HEAD /text HTTP/1.1\r\nHost: t\r\n\r\nGET /bad\u{7F} HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await client.readResponse(method: "HEAD").status == 200)
            let refusal = try await client.readResponse(timeout: 5)
            #expect(refusal.status == 400)
            #expect(refusal.text.hasPrefix("{\"error\":\"bad_request\""))
            #expect(try await client.waitForClose(timeout: 5))
        }
    }

    @Test("A body cut off by the client's EOF: the handler's answer, then the close (not the progress timeout)")
    func eofInsideBodyThenDrain() async throws {
        // The progress timeout (30 s) is what the old code waited for in `.draining`.
        try await withServer { server in
            let client = try await server.client()
            try await server.withLoopsBlocked {
                try await client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nT: v\r\n")
                client.shutdownWrite()
            }
            // `/echo` gives up on `.connectionClosed`; the server answers 500 for it.
            #expect(try await client.readResponse().status == 500)
            #expect(try await client.waitForClose(timeout: 10))
        }
    }

    @Test("A handler waiting for body bytes sees the EOF that came with framing-only bytes (no further edge comes)")
    func framingBytesAndEOFTogether() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            #expect(await server.awaitConnection { $0.awaitingBody } != nil)
            try await server.withLoopsBlocked {
                // The last chunk and half a trailer section: no body bytes, then the EOF.
                try await client.send("0\r\nT: v\r\n")
                client.shutdownWrite()
            }
            #expect(try await client.readResponse().status == 500)
            #expect(try await client.waitForClose(timeout: 10))
        }
    }

    /// With `pausing`, the server stops parsing at the watermark and reads the EOF when it resumes,
    /// with the second request still buffered; without, it reads the EOF while the first answer is
    /// still queued (the old code closed at once and cut that answer off).
    @Test("A client that half-closes after its requests gets every answer queued for it, then the close",
          arguments: [false, true])
    func halfCloseDoesNotCutQueuedAnswers(pausing: Bool) async throws {
        var config = TestServer.configuration()
        if !pausing {
            config.writeHighWatermark = 64 * 1024 * 1024
            config.writeLowWatermark = 32 * 1024 * 1024
        }
        try await withServer(config) { server in
            // A small receive window: most of the answer is still queued when the EOF is read.
            let client = try await server.client(receiveBuffer: 64 * 1024)
            try await server.withLoopsBlocked {
                try await client.send(get("/big?size=\(8 * 1024 * 1024)") + get("/text"))
                client.shutdownWrite()
            }
            let big = try await client.readResponse(timeout: 20)
            let mismatch = patternMismatch(big.body, expectedCount: 8 * 1024 * 1024)
            #expect(mismatch == nil, "body of \(big.body.count) bytes differs at \(mismatch ?? -1)")
            #expect(try await client.readResponse().text == "hello world")
            // Closed once the answers are out, not after the idle timeout (5 s here): the EOF was
            // read while a request was still pending.
            #expect(try await client.waitForClose(timeout: 4))
        }
    }
}
