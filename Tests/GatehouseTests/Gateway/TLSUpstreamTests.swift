import Crypto
import Foundation
@testable import Gatehouse
import GatehouseCore
import HTTPClient
import HTTP1
import HTTPServer
import Testing
import TestSupport

/// `https://` upstreams (the pooled client with TLS, `UpstreamClients.tls`) against a real TLS server.
///
/// Gatehouse trusts the system CA bundle (`TLSClientContext`) and nothing else, so each
/// scenario runs this test binary again, filtered to one `TLSUpstreamScenarios` test, inside a
/// private mount namespace (`unshare --mount`) where a bundle with this run's certificate is
/// bind-mounted over `/etc/ssl/certs/ca-certificates.crt`. Nothing outside that namespace changes.
/// Needs `unshare` with CAP_SYS_ADMIN (root in the test container).
@Suite("TLSUpstream", .serialized)
struct TLSUpstreamTests {
    @Test("streams over real TLS", arguments: TLSScenario.allCases)
    func scenario(_ scenario: TLSScenario) async throws {
        let certificates = try await TLSTestCertificates.make()
        defer { certificates.remove() }
        let binary = CommandLine.arguments[0]
        var environment = ProcessInfo.processInfo.environment
        environment[TLSScenario.directoryVariable] = certificates.directory.path
        let result = try await runTLSTestCommand("/usr/bin/unshare", [
            "--mount", "--propagation", "private", "/bin/sh", "-c",
            #"mount --bind "$0" /etc/ssl/certs/ca-certificates.crt && exec "$@""#,
            certificates.bundle, binary, "--testing-library", "swift-testing",
            "--filter", "TLSUpstreamScenarios/\(scenario.rawValue)\\("], environment: environment)
        let ran = FileManager.default.fileExists(atPath: certificates.directory.appendingPathComponent(scenario.rawValue).path)
        #expect(ran, "the scenario did not run in the child process:\n\(result.output.suffix(3000))")
        #expect(result.status == 0, "the scenario failed in the child process:\n\(result.output.suffix(6000))")
    }

    /// `SSL_CERT_FILE` names the bundle instead of the system's (docs/security.md "Trusted certificates"): the
    /// `echo` scenario runs in a child without the private mount, trusting the test certificate
    /// only through the variable; with the variable naming a missing file, the same trusted
    /// server is refused (`unreadableBundle`: no readable bundle, no unchecked connection).
    @Test("SSL_CERT_FILE names the trusted bundle; a bundle that cannot be read refuses every connection")
    func bundleFromEnvironment() async throws {
        let certificates = try await TLSTestCertificates.make()
        defer { certificates.remove() }
        for (scenario, bundle) in [("echo", certificates.bundle), ("unreadableBundle", certificates.directory.path + "/missing.pem")] {
            var environment = ProcessInfo.processInfo.environment
            environment[TLSScenario.directoryVariable] = certificates.directory.path
            environment["SSL_CERT_FILE"] = bundle
            let result = try await runTLSTestCommand(CommandLine.arguments[0], [
                "--testing-library", "swift-testing", "--filter", "TLSUpstreamScenarios/\(scenario)\\("], environment: environment)
            let ran = FileManager.default.fileExists(atPath: certificates.directory.appendingPathComponent(scenario).path)
            #expect(ran, "\(scenario) did not run in the child process:\n\(result.output.suffix(3000))")
            #expect(result.status == 0, "\(scenario) failed in the child process:\n\(result.output.suffix(6000))")
        }
    }

    @Test("an upstream whose certificate the system does not trust is refused: 502, nothing relayed")
    func untrustedCertificate() async throws {
        // Outside the private mount namespace the test CA is unknown, as a forged certificate would be.
        let certificates = try await TLSTestCertificates.make()
        defer { certificates.remove() }
        let server = try await TLSTestServer.start(certificates: certificates)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        try await expectTLSRefused(host: "127.0.0.1", port: server.port, target: "/echo", context: context)
    }

    @Test("the answer's framing: its Content-Length, encoded bodies untouched, policy applied")
    func framing() throws {
        let encodedHeaders = HTTPHeaders([("Content-Encoding", "gzip"), ("Content-Length", "120"), ("Content-Type", "text/plain")])
        let encodedFraming = try UpstreamResponseFraming(HTTPResponseHead(status: 200, headers: encodedHeaders),
                                                         requestMethod: "GET", version: .http1_1)
        let encoded = BrowserAnswerHead.make(status: 200, upstreamHeaders: encodedHeaders, framing: encodedFraming)
        #expect(encoded.contentLength == 120)
        #expect(encoded.head.headers["Content-Encoding"] == "gzip")
        #expect(encoded.head.headers["Content-Type"] == "text/plain")
        #expect(encoded.head.headers["X-Content-Type-Options"] == "nosniff" && !encoded.head.headers.contains("Strict-Transport-Security"))
        let strict = BrowserAnswerHead.make(status: 200, upstreamHeaders: encodedHeaders, framing: encodedFraming,
                                            secure: SecuredAnswers(strictTransportSecurity: "max-age=60"))
        #expect(strict.head.headers["Strict-Transport-Security"] == "max-age=60")

        let plainHeaders = HTTPHeaders([("Content-Length", "42"), ("Set-Cookie", "a=1"), ("Connection", "close")])
        let plain = BrowserAnswerHead.make(status: 200, upstreamHeaders: plainHeaders,
                                         framing: try UpstreamResponseFraming(HTTPResponseHead(status: 200, headers: plainHeaders),
                                                                              requestMethod: "GET", version: .http1_1))
        #expect(plain.contentLength == 42)
        #expect(!plain.head.headers.contains("Set-Cookie"))
        #expect(!plain.head.headers.contains("Connection"))

        let chunkedHeaders = HTTPHeaders([("Transfer-Encoding", "chunked")])
        let chunked = BrowserAnswerHead.make(status: 200, upstreamHeaders: chunkedHeaders,
                                           framing: try UpstreamResponseFraming(HTTPResponseHead(status: 200, headers: chunkedHeaders),
                                                                                requestMethod: "GET", version: .http1_1))
        #expect(chunked.contentLength == nil)
        #expect(!chunked.head.headers.contains("Transfer-Encoding"))
    }
}

enum TLSScenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case serverSentEvents, bigDownload, closedPort, slowFirstByte, redirect, echo, gzip, browserGone, cookies,
         streamedUpload, chunkedUpload, uploadTooLarge, connectionReuse, upstreamCut, throughGateway, caBundleReadOnce,
         hostMismatch

    static let directoryVariable = "GATEHOUSE_TLS_TEST_DIR"
    var testDescription: String { rawValue }
}

/// The scenarios, run only inside the child process that `TLSUpstreamTests` starts.
@Suite(.enabled(if: ProcessInfo.processInfo.environment[TLSScenario.directoryVariable] != nil),
       .serialized)
struct TLSUpstreamScenarios {
    private static func environment(_ scenario: TLSScenario) throws -> (TLSTestCertificates, TLSTestServer) {
        let certificates = try TLSTestCertificates.forChildScenario(variable: TLSScenario.directoryVariable,
                                                                    marker: scenario.rawValue)
        return (certificates, try TLSTestServer(certificates: certificates))
    }

    private static func request(_ target: String, method: String = "GET", port: Int,
                                headers: HTTPHeaders = ["Accept": "*/*"]) -> UpstreamRequest {
        UpstreamRequest(host: "127.0.0.1", port: port, method: method, target: target, headers: headers)
    }

    @Test func serverSentEvents() async throws {
        let (_, server) = try Self.environment(.serverSentEvents)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        let writer = RecordingTLSWriter(keepText: true)
        await relayOnTestLoop(Self.request("/sse", port: server.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: writer)
        let record = writer.snapshot
        let end = ContinuousClock.now
        #expect(record.head?.status == 200)
        #expect(record.head?.headers["Content-Type"] == "text/event-stream")
        #expect(record.contentLength == nil)
        #expect(record.finished)
        #expect(record.pieceTexts.joined() == (0..<5).map { "data: event \($0)\n\n" }.joined())
        // Five events 300 ms apart: they arrive one by one, the first long before the last.
        #expect(record.pieceTimes.count >= 4)
        let first = try #require(record.pieceTimes.first)
        let last = try #require(record.pieceTimes.last)
        #expect(first - writer.start < .milliseconds(900))
        #expect(last - first > .milliseconds(900))
        #expect(end - writer.start > .milliseconds(1200))
    }

    @Test func bigDownload() async throws {
        let (_, server) = try Self.environment(.bigDownload)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        // Warm up (TLS, allocator), then measure the big body against a browser reading ~8 MiB/s.
        await relayOnTestLoop(Self.request("/echo", port: server.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: RecordingTLSWriter())
        let baseline = residentBytes()
        let writer = RecordingTLSWriter(pause: .milliseconds(2))
        await relayOnTestLoop(Self.request("/big", port: server.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: writer)
        let record = writer.snapshot
        #expect(record.head?.status == 200)
        #expect(record.contentLength == TLSTestUpstream.bigSize)
        #expect(record.finished)
        #expect(!record.aborted)
        #expect(record.bodyLength == TLSTestUpstream.bigSize)
        #expect(writer.bodySHA256 == record.head?.headers["X-Body-SHA256"])
        let growth = record.peakResident - baseline
        #expect(growth < 16 << 20, "resident memory grew by \(growth >> 20) MiB during a 32 MiB download")
    }

    @Test func closedPort() async throws {
        let (_, server) = try Self.environment(.closedPort)
        defer { server.stop() }
        let closed = try PortReservation()
        let context = try makeTLSTestContext(upstreamPort: closed.port)
        let writer = RecordingTLSWriter()
        await relayOnTestLoop(Self.request("/echo", port: closed.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: writer)
        let response = try #require(writer.snapshot.response)
        #expect(response.status == 502)
        #expect(response.jsonErrorCode == "upstream_unreachable")
        #expect(writer.snapshot.head == nil)
    }

    @Test func slowFirstByte() async throws {
        let (_, server) = try Self.environment(.slowFirstByte)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port, upstreamTimeout: "1s")
        let writer = RecordingTLSWriter()
        let started = ContinuousClock.now
        await relayOnTestLoop(Self.request("/slow", port: server.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: writer)
        let elapsed = ContinuousClock.now - started
        let response = try #require(writer.snapshot.response)
        #expect(response.status == 504)
        #expect(response.jsonErrorCode == "upstream_timeout")
        #expect(elapsed >= .milliseconds(900) && elapsed < .milliseconds(2500), "took \(elapsed)")
    }

    @Test func redirect() async throws {
        let (_, server) = try Self.environment(.redirect)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        let writer = RecordingTLSWriter(keepText: true)
        await relayOnTestLoop(Self.request("/redirect", port: server.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: writer)
        let record = writer.snapshot
        #expect(record.head?.status == 302)
        #expect(record.head?.headers["Location"] == "/echo")
        #expect(record.finished)
        // Not followed: the body is the redirect's own, never /echo's JSON.
        #expect(!record.pieceTexts.joined().contains("method"))
    }

    @Test func echo() async throws {
        let (_, server) = try Self.environment(.echo)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        let upload = [UInt8](repeating: 0x61, count: 1 << 20)
        let writer = RecordingTLSWriter(keepText: true)
        await relayOnTestLoop(Self.request("/echo/x?a=1&b=%20", method: "POST", port: server.port,
                                               headers: ["Content-Type": "application/octet-stream",
                                                         "Content-Length": "\(upload.count)",
                                                         "X-Custom": "kept"]),
                                  body: BufferedRequestBody(upload), via: context.upstreams.tls, context: context, writer: writer)
        let record = writer.snapshot
        #expect(record.head?.status == 200)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(record.pieceTexts.joined().utf8)) as? [String: Any])
        #expect(answer["method"] as? String == "POST")
        #expect(answer["target"] as? String == "/echo/x?a=1&b=%20")
        #expect(answer["bodyLength"] as? Int == upload.count)
        let headers = try #require(answer["headers"] as? [String: String])
        #expect(headers["x-custom"] == "kept")
        #expect(headers["content-type"] == "application/octet-stream")
        #expect(headers["host"] == "127.0.0.1:\(server.port)")
    }

    @Test func gzip() async throws {
        let (_, server) = try Self.environment(.gzip)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        let writer = RecordingTLSWriter(keepText: true)
        await relayOnTestLoop(Self.request("/gzip", port: server.port, headers: ["Accept-Encoding": "gzip"]),
                                  body: BufferedRequestBody([]), via: context.upstreams.tls, context: context, writer: writer)
        let record = writer.snapshot
        // Passed through as the upstream encoded it: coding, length and bytes unchanged.
        #expect(record.head?.status == 200)
        #expect(record.head?.headers["Content-Encoding"] == "gzip")
        #expect(record.contentLength == record.bodyLength)
        #expect(record.bodyLength > 0 && record.bodyLength < 7000)
        #expect(record.finished)
        #expect(writer.bodySHA256 == record.head?.headers["X-Body-SHA256"])
    }

    @Test func browserGone() async throws {
        let (_, server) = try Self.environment(.browserGone)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        let writer = RecordingTLSWriter(failAtPiece: 1)
        let started = ContinuousClock.now
        await relayOnTestLoop(Self.request("/sse", port: server.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: writer)
        // The first event fails to reach the browser: the relay stops instead of waiting out the stream.
        #expect(ContinuousClock.now - started < .milliseconds(1000))
        #expect(writer.snapshot.pieceTimes.count == 1)
        #expect(!writer.snapshot.finished)
    }

    @Test func cookies() async throws {
        let (_, server) = try Self.environment(.cookies)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        let writer = RecordingTLSWriter()
        await relayOnTestLoop(Self.request("/cookie", port: server.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: writer)
        let head = try #require(writer.snapshot.head)
        #expect(head.headers["X-Upstream"] == "yes")
        #expect(!head.headers.contains("Set-Cookie"))
        #expect(writer.snapshot.contentLength == 2)
    }

    @Test func streamedUpload() async throws {
        let (_, server) = try Self.environment(.streamedUpload)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port, maxBody: "100m")
        await relayOnTestLoop(Self.request("/echo", port: server.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: RecordingTLSWriter())
        let baseline = residentBytes()
        // 64 MiB from a slow browser: it must reach the upstream whole, without being held in memory.
        let body = GeneratedTLSBody(size: 64 << 20, declareLength: true)
        let writer = RecordingTLSWriter(keepText: true)
        await relayOnTestLoop(Self.request("/upload", method: "PUT", port: server.port,
                                               headers: ["Content-Type": "application/octet-stream",
                                                         "Content-Length": "\(body.size)"]),
                                  body: body, via: context.upstreams.tls, context: context, writer: writer)
        let record = writer.snapshot
        #expect(record.head?.status == 200)
        let answer = try tlsAnswerJSON(record)
        #expect(answer["bodyLength"] as? Int == body.size)
        #expect(answer["chunked"] as? Bool == false)
        #expect(answer["bodySHA256"] as? String == body.expectedSHA256)
        let growth = body.peakResident - baseline
        #expect(growth < 24 << 20, "resident memory grew by \(growth >> 20) MiB during a 64 MiB upload")
    }

    @Test func chunkedUpload() async throws {
        let (_, server) = try Self.environment(.chunkedUpload)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        let body = GeneratedTLSBody(size: 3 << 20, pieceSize: 10_000, declareLength: false)
        let writer = RecordingTLSWriter(keepText: true)
        await relayOnTestLoop(Self.request("/upload", method: "POST", port: server.port), body: body,
                                  via: context.upstreams.tls, context: context, writer: writer)
        let record = writer.snapshot
        #expect(record.head?.status == 200)
        let answer = try tlsAnswerJSON(record)
        #expect(answer["chunked"] as? Bool == true)
        #expect(answer["bodyLength"] as? Int == body.size)
        #expect(answer["bodySHA256"] as? String == body.expectedSHA256)
    }

    @Test func uploadTooLarge() async throws {
        let (_, server) = try Self.environment(.uploadTooLarge)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port, maxBody: "1m")
        // Chunked, so the size shows only while streaming: the upload stops and the browser gets 413.
        let writer = RecordingTLSWriter()
        await relayOnTestLoop(Self.request("/upload", method: "POST", port: server.port),
                                  body: GeneratedTLSBody(size: 2 << 20, declareLength: false, limit: 1 << 20),
                                  via: context.upstreams.tls, context: context, writer: writer)
        let response = try #require(writer.snapshot.response)
        #expect(response.status == 413)
        #expect(response.jsonErrorCode == "payload_too_large")
        // A declared length over the limit is refused before anything is sent.
        let declared = RecordingTLSWriter()
        await relayOnTestLoop(Self.request("/upload", method: "POST", port: server.port),
                                  body: GeneratedTLSBody(size: 2 << 20, declareLength: true, limit: 1 << 20),
                                  via: context.upstreams.tls, context: context, writer: declared)
        #expect(declared.snapshot.response?.status == 413)
    }

    @Test func connectionReuse() async throws {
        let (_, server) = try Self.environment(.connectionReuse)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        var connections: [Int] = []
        for method in ["GET", "POST", "GET"] {
            let writer = RecordingTLSWriter(keepText: true)
            let upload: [UInt8] = method == "POST" ? Array("{\"a\":1}".utf8) : []
            await relayOnTestLoop(Self.request("/echo", method: method, port: server.port),
                                      body: BufferedRequestBody(upload), via: context.upstreams.tls, context: context, writer: writer)
            #expect(writer.snapshot.head?.status == 200)
            let answer = try tlsAnswerJSON(writer.snapshot)
            #expect(answer["bodyLength"] as? Int == upload.count)
            connections.append(try #require(answer["connection"] as? Int))
        }
        // One TCP (and TLS) connection carried all three exchanges.
        #expect(Set(connections).count == 1, "connections used: \(connections)")
    }

    @Test func upstreamCut() async throws {
        let (_, server) = try Self.environment(.upstreamCut)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        let writer = RecordingTLSWriter()
        await relayOnTestLoop(Self.request("/cut", port: server.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: writer)
        let record = writer.snapshot
        // The head went out with the promised length: the browser's connection is cut, not finished.
        #expect(record.head?.status == 200)
        #expect(record.contentLength == 1 << 20)
        #expect(record.aborted)
        #expect(!record.finished)
        #expect(record.bodyLength <= 100_000)
        let cutConnection = try #require(record.head?.headers["X-Connection"].flatMap { Int($0) })
        // The broken connection is not reused: the next request opens a new one.
        let next = RecordingTLSWriter(keepText: true)
        await relayOnTestLoop(Self.request("/echo", port: server.port), body: BufferedRequestBody([]),
                                  via: context.upstreams.tls, context: context, writer: next)
        #expect(next.snapshot.head?.status == 200)
        let answer = try tlsAnswerJSON(next.snapshot)
        #expect(answer["connection"] as? Int != cutConnection)
    }

    /// The CA bundle is parsed once for the client, not once per TLS connection (`TLSClientContext`: about
    /// 24 ms of CPU each time): four answers that each close their connection, one open of the file.
    /// Each connection after the first resumes a session its predecessor was given (`TLSSessionCache`).
    @Test func caBundleReadOnce() async throws {
        let (certificates, server) = try Self.environment(.caBundleReadOnce)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        // The bundle is bind-mounted over the system one: the same inode, watched for opens.
        let opens = try FileOpenWatch(path: certificates.bundle)
        defer { opens.close() }
        var connections: [Int] = []
        var resumed: [Bool] = []
        for _ in 0..<4 {
            let writer = RecordingTLSWriter(keepText: true)
            await relayOnTestLoop(Self.request("/close", port: server.port), body: BufferedRequestBody([]),
                                        via: context.upstreams.tls, context: context, writer: writer)
            #expect(writer.snapshot.head?.status == 200)
            let answer = try tlsAnswerJSON(writer.snapshot)
            connections.append(try #require(answer["connection"] as? Int))
            resumed.append(try #require(answer["resumed"] as? Bool))
        }
        #expect(Set(connections).count == 4, "connections used: \(connections)")
        #expect(resumed == [false, true, true, true], "sessions resumed: \(resumed)")
        let opened = opens.count()
        #expect(opened == 1, "the CA bundle was opened \(opened) times for 4 TLS connections")
    }

    /// Run only by `TLSUpstreamTests.bundleFromEnvironment`, with `SSL_CERT_FILE` naming a missing
    /// file (not one of `TLSScenario`: under the bind-mounted bundle it would be answered).
    @Test func unreadableBundle() async throws {
        let certificates = try TLSTestCertificates.forChildScenario(variable: TLSScenario.directoryVariable,
                                                                    marker: "unreadableBundle")
        let server = try TLSTestServer(certificates: certificates)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        try await expectTLSRefused(host: "127.0.0.1", port: server.port, target: "/echo", context: context)
    }

    /// The certificate names 127.0.0.1 only: reached as `localhost`, the same trusted server is
    /// refused (502, nothing relayed), even right after a session was kept for `127.0.0.1` on the
    /// same port (a resumed session would skip the certificate check: it is never offered to
    /// another name), and the refused connections never reach the upstream's HTTP handler.
    @Test func hostMismatch() async throws {
        let (_, server) = try Self.environment(.hostMismatch)
        defer { server.stop() }
        let context = try makeTLSTestContext(upstreamPort: server.port)
        let trusted = RecordingTLSWriter(keepText: true)
        await relayOnTestLoop(Self.request("/close", port: server.port), body: BufferedRequestBody([]),
                              via: context.upstreams.tls, context: context, writer: trusted)
        #expect(trusted.snapshot.head?.status == 200)
        let first = try #require(try tlsAnswerJSON(trusted.snapshot)["connection"] as? Int)
        for _ in 0..<2 {
            try await expectTLSRefused(host: "localhost", port: server.port, target: "/close", context: context)
        }
        // The next trusted connection is the upstream's next request: the refused ones sent none.
        let again = RecordingTLSWriter(keepText: true)
        await relayOnTestLoop(Self.request("/close", port: server.port), body: BufferedRequestBody([]),
                              via: context.upstreams.tls, context: context, writer: again)
        let answer = try tlsAnswerJSON(again.snapshot)
        #expect(answer["resumed"] as? Bool == true)
        // The upstream counts the connections it served: none was served to `localhost`.
        #expect(answer["connection"] as? Int == first + 1)
    }

    /// The whole path: browser → gateway (real server, session, CSRF) → https upstream, so the upload
    /// pump and the relay share the browser's connection as in production.
    @Test func throughGateway() async throws {
        let (_, server) = try Self.environment(.throughGateway)
        defer { server.stop() }
        let options = HarnessOptions(environment: ["GATEHOUSE_ROUTES": "/api=https://127.0.0.1:\(server.port)"])
        try await GatewayHarness.with(options) { harness in
            let browser = harness.browser()
            try await browser.login()

            let upload = (0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let sized = try await browser.send("PUT", "/api/upload", csrf: true, body: .bytes(upload), timeoutSeconds: 60)
            #expect(sized.status == 200)
            let sizedAnswer = try #require(try JSONSerialization.jsonObject(with: Data(sized.text.utf8)) as? [String: Any])
            #expect(sizedAnswer["bodyLength"] as? Int == upload.count)
            #expect(sizedAnswer["chunked"] as? Bool == false)
            let expected = SHA256.hash(data: upload).map { String(format: "%02x", $0) }.joined()
            #expect(sizedAnswer["bodySHA256"] as? String == expected)

            let chunks = (0..<40).map { [UInt8](repeating: UInt8($0), count: 5_000) }
            let chunked = try await browser.send("POST", "/api/upload", csrf: true, body: .chunked(chunks))
            #expect(chunked.status == 200)
            let chunkedAnswer = try #require(try JSONSerialization.jsonObject(with: Data(chunked.text.utf8)) as? [String: Any])
            #expect(chunkedAnswer["chunked"] as? Bool == true)
            #expect(chunkedAnswer["bodyLength"] as? Int == 200_000)

            let events = try await browser.send("GET", "/api/sse", csrf: true)
            #expect(events.status == 200)
            #expect(events.text == (0..<5).map { "data: event \($0)\n\n" }.joined())

            // Kept connections are pooled per event loop: however many requests, no more TLS
            // connections than loops (each browser request here is a connection of its own, so it
            // may land on any loop).
            var connections: [Int] = []
            for _ in 0..<6 {
                let echo = try await browser.send("GET", "/api/echo?x=1", csrf: true)
                #expect(echo.status == 200)
                let answer = try #require(try JSONSerialization.jsonObject(with: Data(echo.text.utf8)) as? [String: Any])
                #expect(answer["target"] as? String == "/api/echo?x=1")
                let headers = try #require(answer["headers"] as? [String: String])
                #expect(headers["authorization"]?.hasPrefix("Bearer ") == true)
                #expect(headers["cookie"] == nil)
                connections.append(try #require(answer["connection"] as? Int))
            }
            #expect(Set(connections).count <= HTTPServerConfiguration.coreCount, "TLS connections \(connections)")
        }
    }
}

/// Sends `GET target` to `https://host:port` through the gateway's relay and expects the TLS
/// connection refused: `502 upstream_unreachable`, no head of the upstream relayed.
func expectTLSRefused(host: String, port: Int, target: String, context: GatewayContext,
                      sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let writer = RecordingTLSWriter()
    await relayOnTestLoop(UpstreamRequest(host: host, port: port, method: "GET", target: target, headers: ["Accept": "*/*"]),
                          body: BufferedRequestBody([]), via: context.upstreams.tls, context: context, writer: writer)
    let response = try #require(writer.snapshot.response, sourceLocation: sourceLocation)
    #expect(response.status == 502, sourceLocation: sourceLocation)
    #expect(response.jsonErrorCode == "upstream_unreachable", sourceLocation: sourceLocation)
    #expect(writer.snapshot.head == nil, sourceLocation: sourceLocation)
}
