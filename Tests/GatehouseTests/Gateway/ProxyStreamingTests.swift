import Crypto
import Foundation
import Synchronization
import Testing
import TestSupport

/// Streaming through the proxy: server-sent events and a large download.
@Suite("Gateway: proxy streaming")
struct ProxyStreamingTests {
    @Test("server-sent events reach the browser as they come, before the stream ends")
    func serverSentEvents() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let clock = ContinuousClock()
            let arrivals = Mutex<[(ContinuousClock.Instant, String)]>([])
            let started = clock.now
            let response = try await browser.send("GET", "/api/sse", csrf: true, headers: [("Accept", "text/event-stream")]) { piece in
                arrivals.withLock { $0.append((clock.now, String(decoding: piece, as: UTF8.self))) }
            }
            let ended = clock.now
            #expect(response.status == 200)
            #expect(response.headers["Content-Type"] == "text/event-stream")
            #expect(response.text == (1...5).map { "data: event \($0)\n\n" }.joined())
            // SPEC API routes: "server-sent events reach the browser as they come". The upstream spaces
            // five events 200 ms apart, so the first must arrive well before the last.
            let firstEvent = try #require(arrivals.withLock { $0.first { $0.1.contains("event 1") }?.0 })
            #expect(ended - firstEvent >= .milliseconds(600))
            #expect(firstEvent - started < .milliseconds(600))
            #expect(arrivals.withLock { $0.count } >= 4)
        }
    }

    @Test("a 64 MiB download streams through intact")
    func largeDownload() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let digest = Mutex(SHA256())
            let received = Mutex(0)
            // SPEC API routes: "streamed both ways (a large upload or download is not buffered whole)".
            let response: RawResponse
            do {
                response = try await browser.send("GET", "/api/big?mib=64", csrf: true, timeoutSeconds: 60,
                                                  collectBody: false) { piece in
                    digest.withLock { $0.update(data: piece) }
                    received.withLock { $0 += piece.count }
                }
            } catch {
                Issue.record("download failed: \(error); gateway log: \(harness.logLines().filter { !$0.contains("\"info\"") })")
                return
            }
            #expect(response.status == 200)
            #expect(response.headers["Content-Length"] == "\(64 << 20)")
            #expect(received.withLock { $0 } == 64 << 20)
            let actual = digest.withLock { $0.finalize() }.map { String(format: "%02x", $0) }.joined()
            #expect(actual == BigBody.sha256(mebibytes: 64))
        }
    }

    @Test("a download to a slow reader arrives intact: back-pressure pauses the upstream, never cuts it")
    func slowReader() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let digest = Mutex(SHA256())
            let received = Mutex(0)
            // The reader pauses after every piece, so the gateway's writes to it block while the upstream
            // keeps sending: the relay must wait, not drop the upstream connection.
            let response: RawResponse
            do {
                response = try await browser.send("GET", "/api/big?mib=8", csrf: true, timeoutSeconds: 60,
                                                  collectBody: false) { piece in
                    digest.withLock { $0.update(data: piece) }
                    received.withLock { $0 += piece.count }
                    usleep(2_000)
                }
            } catch {
                Issue.record("download failed: \(error); gateway log: \(harness.logLines().filter { !$0.contains("\"info\"") })")
                return
            }
            #expect(response.status == 200)
            #expect(received.withLock { $0 } == 8 << 20)
            let actual = digest.withLock { $0.finalize() }.map { String(format: "%02x", $0) }.joined()
            #expect(actual == BigBody.sha256(mebibytes: 8))
        }
    }
}
