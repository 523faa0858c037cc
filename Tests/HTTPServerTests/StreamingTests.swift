import Testing
@testable import HTTPServer
import TestSupport

@Suite("Server: streamed responses, back-pressure and disconnects")
struct StreamingTests {
    @Test("A client that does not read stops the producer: 64 MiB stream, bounded buffering, intact body")
    func backPressure() async throws {
        try await withServer { server in
            // A small receive window keeps the kernel's share of the in-flight bytes small and fixed.
            let client = try await server.client(receiveBuffer: 64 * 1024)
            try await client.send(get("/flood?mib=64"))
            try await Task.sleep(nanoseconds: 1_000_000_000)
            // Without back-pressure the handler would have pushed all 64 MiB into the connection's
            // buffer by now. With it: the high watermark (256 KiB) plus the socket buffers
            // (send buffer autotunes up to 4 MiB here, receive window 64 KiB).
            let accepted = server.log.floodAccepted
            #expect(accepted > 0)
            #expect(accepted < 8 * 1024 * 1024, "handler wrote \(accepted) bytes into a stalled connection")

            let response = try await client.readResponse(timeout: 20)
            let mismatch = patternMismatch(response.body, expectedCount: 64 * 1024 * 1024)
            #expect(mismatch == nil, "body of \(response.body.count) bytes differs at \(mismatch ?? -1)")
            #expect(server.log.writeErrors.isEmpty)
        }
    }

    @Test("A client that disconnects mid-stream makes writeBody throw .connectionClosed")
    func disconnectMidStream() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send(get("/endless"))
            var received = 0
            while received < 200 * 1024 {
                guard let bytes = try await client.receiveOnce(timeout: 2), !bytes.isEmpty else { break }
                received += bytes.count
            }
            #expect(received >= 200 * 1024)
            client.close()
            #expect(await eventually { server.log.writeErrors == [.connectionClosed] })
        }
    }

    @Test("A large one-piece answer before close survives a client that starts reading late (linger waits for the flush)")
    func slowReaderBeforeClose() async throws {
        try await withServer { server in
            let client = try await server.client(receiveBuffer: 64 * 1024)
            // More than the kernel's socket buffers can take (send buffer autotunes up to 4 MiB).
            try await client.send(get("/big?size=\(16 * 1024 * 1024)", "Connection: close\r\n"))
            _ = try await client.receiveOnce(timeout: 5)
            // Longer than the 2 s linger period, shorter than the 30 s progress timeout.
            try await Task.sleep(nanoseconds: 2_300_000_000)
            let response = try await client.readResponse(timeout: 10)
            let mismatch = patternMismatch(response.body, expectedCount: 16 * 1024 * 1024)
            #expect(mismatch == nil, "body of \(response.body.count) bytes differs at \(mismatch ?? -1)")
            #expect(try await client.waitForClose(timeout: 3))
        }
    }

    @Test("A large one-piece answer on a keep-alive connection is not cut by the idle timeout while it is sent")
    func slowReaderKeepAlive() async throws {
        try await withServer(TestServer.shortIdle) { server in
            let client = try await server.client(receiveBuffer: 64 * 1024)
            try await client.send(get("/big?size=\(16 * 1024 * 1024)"))
            _ = try await client.receiveOnce(timeout: 5)
            // Longer than the 1 s idle timeout, shorter than the 30 s progress timeout.
            try await Task.sleep(nanoseconds: 1_500_000_000)
            let response = try await client.readResponse(timeout: 10)
            let mismatch = patternMismatch(response.body, expectedCount: 16 * 1024 * 1024)
            #expect(mismatch == nil, "body of \(response.body.count) bytes differs at \(mismatch ?? -1)")
            #expect(response.headers["Connection"] == nil)
            #expect(!client.sawEOF)
        }
    }
}
