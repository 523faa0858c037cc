import Foundation
@testable import Gatehouse
import GatehouseCore
import HTTPClient
import HTTP1
import Testing
import TestSupport

/// Security review, issue 10, on `https://` upstreams: the hostile upstream of the e2e
/// suite (`e2e/hostile_upstream.py --tls`) behind the relay and the TLS upstream client.
///
/// As in `TLSUpstreamTests`, each scenario runs this test binary again inside a private mount
/// namespace (`unshare --mount`) where this run's certificate is trusted.
@Suite("TLSUpstream hardening", .serialized)
struct TLSUpstreamHardeningTests {
    @Test("hostile https upstream", arguments: TLSHardeningScenario.allCases)
    func scenario(_ scenario: TLSHardeningScenario) async throws {
        let certificates = try await TLSTestCertificates.make()
        defer { certificates.remove() }
        var environment = ProcessInfo.processInfo.environment
        environment[TLSHardeningScenario.directoryVariable] = certificates.directory.path
        let result = try await runTLSTestCommand("/usr/bin/unshare", [
            "--mount", "--propagation", "private", "/bin/sh", "-c",
            #"mount --bind "$0" /etc/ssl/certs/ca-certificates.crt && exec "$@""#,
            certificates.bundle, CommandLine.arguments[0], "--testing-library", "swift-testing",
            "--filter", "TLSHardeningScenarios/\(scenario.rawValue)\\("], environment: environment)
        let ran = FileManager.default.fileExists(atPath: certificates.directory.appendingPathComponent(scenario.rawValue).path)
        #expect(ran, "the scenario did not run in the child process:\n\(result.output.suffix(3000))")
        #expect(result.status == 0, "the scenario failed in the child process:\n\(result.output.suffix(6000))")
    }
}

enum TLSHardeningScenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case ambiguousLength, switchingProtocols, brokenChunk, bodilessAnswers, interimAnswers, unsafeNotReplayed,
         safeRetriedOnce, throughGateway

    static let directoryVariable = "GATEHOUSE_TLS_HARDENING_DIR"
    var testDescription: String { rawValue }
}

/// The hostile upstream process, serving TLS with this run's certificate.
final class HostileTLSUpstream: Sendable {
    let port: Int
    private let process: ChildProcess

    /// `e2e/hostile_upstream.py` of this checkout.
    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("e2e/hostile_upstream.py").path
    }

    init(certificates: TLSTestCertificates) throws {
        let process = try ChildProcess(["python3", Self.script, "--tls", certificates.certificate, certificates.key],
                                       mergeStandardError: false)
        guard let line = process.readLine(), let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.kill()
            throw TLSTestError.setup("the hostile upstream did not start")
        }
        self.port = port
        self.process = process
    }

    func stop() { process.kill() }
}

/// The scenarios, run only inside the child process that `TLSUpstreamHardeningTests` starts.
@Suite(.enabled(if: ProcessInfo.processInfo.environment[TLSHardeningScenario.directoryVariable] != nil),
       .serialized)
struct TLSHardeningScenarios {
    private static func environment(_ scenario: TLSHardeningScenario) throws -> (HostileTLSUpstream, GatewayContext) {
        let certificates = try TLSTestCertificates.forChildScenario(variable: TLSHardeningScenario.directoryVariable,
                                                                    marker: scenario.rawValue)
        let upstream = try HostileTLSUpstream(certificates: certificates)
        return (upstream, try makeTLSTestContext(upstreamPort: upstream.port))
    }

    private static func forward(_ target: String, method: String = "GET", upstream: HostileTLSUpstream,
                                context: GatewayContext, headers: HTTPHeaders = [:]) async -> RecordingTLSWriter.Record {
        let writer = RecordingTLSWriter(keepText: true)
        await relayOnTestLoop(UpstreamRequest(host: "127.0.0.1", port: upstream.port, method: method, target: target,
                                                  headers: headers),
                                  body: BufferedRequestBody([]), via: context.upstreams.tls, context: context, writer: writer)
        return writer.snapshot
    }

    /// What the upstream counted, as (method, path, reused) triples.
    private static func requests(_ upstream: HostileTLSUpstream, context: GatewayContext) async throws -> [(String, String, Bool)] {
        let record = await forward("/_stats", upstream: upstream, context: context)
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(record.text.utf8)) as? [String: Any])
        let list = try #require(stats["requests"] as? [[String: Any]])
        return list.compactMap { entry in
            guard let method = entry["method"] as? String, let path = entry["path"] as? String,
                  let reused = entry["reused"] as? Bool else { return nil }
            return (method, path, reused)
        }
    }

    /// An echo answer is the upstream's JSON, never bytes meant for another exchange.
    private static func expectEcho(_ record: RecordingTLSWriter.Record) {
        #expect(record.status == 200)
        let text = record.text
        #expect(text.hasPrefix("{\"method\""), "not the echo: \(text.prefix(200))")
        #expect(!text.contains("SMUGGLED") && !text.contains("TUNNEL-SECRET"))
    }

    @Test func ambiguousLength() async throws {
        let (upstream, context) = try Self.environment(.ambiguousLength)
        defer { upstream.stop() }
        for name in ["cl-conflict", "cl-list", "cl-sign", "cl-te"] {
            let record = await Self.forward("/\(name)", upstream: upstream, context: context)
            #expect(record.response?.status == 502, "\(name)")
            #expect(record.response?.jsonErrorCode == "upstream_unreachable", "\(name)")
            #expect(record.head == nil, "\(name): a head was relayed")
            Self.expectEcho(await Self.forward("/echo", upstream: upstream, context: context))
        }
    }

    @Test func switchingProtocols() async throws {
        let (upstream, context) = try Self.environment(.switchingProtocols)
        defer { upstream.stop() }
        let record = await Self.forward("/switch", upstream: upstream, context: context)
        #expect(record.response?.status == 502)
        #expect(record.head == nil)
        // The switched connection is gone: the next exchanges never read its tunnel bytes.
        for _ in 0..<3 { Self.expectEcho(await Self.forward("/echo", upstream: upstream, context: context)) }
    }

    @Test func brokenChunk() async throws {
        let (upstream, context) = try Self.environment(.brokenChunk)
        defer { upstream.stop() }
        let record = await Self.forward("/bad-chunk", upstream: upstream, context: context)
        #expect(record.head?.status == 200)
        #expect(record.contentLength == nil)
        #expect(record.aborted)
        #expect(!record.finished)
        #expect(!record.text.contains("SMUGGLED"))
        Self.expectEcho(await Self.forward("/echo", upstream: upstream, context: context))
    }

    @Test func bodilessAnswers() async throws {
        let (upstream, context) = try Self.environment(.bodilessAnswers)
        defer { upstream.stop() }
        let head = await Self.forward("/head-length", method: "HEAD", upstream: upstream, context: context)
        #expect(head.status == 200)
        #expect(head.toldLength == 42)
        #expect(head.bodyLength == 0 && head.complete && head.text.isEmpty)
        let empty = await Self.forward("/no-content", upstream: upstream, context: context)
        #expect(empty.status == 204)
        #expect(empty.bodyLength == 0 && empty.text.isEmpty)
        Self.expectEcho(await Self.forward("/echo", upstream: upstream, context: context))
        let longer = await Self.forward("/longer", upstream: upstream, context: context)
        #expect(longer.text == "hello")
        #expect(longer.toldLength == 5)
        Self.expectEcho(await Self.forward("/echo", upstream: upstream, context: context))
    }

    @Test func interimAnswers() async throws {
        let (upstream, context) = try Self.environment(.interimAnswers)
        defer { upstream.stop() }
        let record = await Self.forward("/interim", upstream: upstream, context: context)
        #expect(record.status == 200)
        #expect(record.text == "final")
    }

    @Test func unsafeNotReplayed() async throws {
        let (upstream, context) = try Self.environment(.unsafeNotReplayed)
        defer { upstream.stop() }
        Self.expectEcho(await Self.forward("/echo", upstream: upstream, context: context))
        // On the kept connection the upstream reads the POST, then closes without an answer:
        // a client that resent it on a fresh connection would make the upstream run it twice.
        let record = await Self.forward("/drop-first", method: "POST", upstream: upstream, context: context)
        #expect(record.response?.status == 502)
        #expect(record.response?.jsonErrorCode == "upstream_unreachable")
        let posts = try await Self.requests(upstream, context: context).filter { $0.0 == "POST" && $0.1 == "/drop-first" }
        #expect(posts.count == 1, "the upstream ran the POST \(posts.count) times")
    }

    @Test func safeRetriedOnce() async throws {
        let (upstream, context) = try Self.environment(.safeRetriedOnce)
        defer { upstream.stop() }
        Self.expectEcho(await Self.forward("/echo", upstream: upstream, context: context))
        let record = await Self.forward("/drop-first", upstream: upstream, context: context)
        #expect(record.status == 200)
        #expect(record.text == "done")
        let gets = try await Self.requests(upstream, context: context).filter { $0.1 == "/drop-first" }
        #expect(gets.map(\.2) == [true, false])
    }

    /// Through the gateway: the same method and header policy as the `http://` path.
    @Test func throughGateway() async throws {
        let (upstream, _) = try Self.environment(.throughGateway)
        defer { upstream.stop() }
        let options = HarnessOptions(environment: ["GATEHOUSE_ROUTES": "/api=https://127.0.0.1:\(upstream.port)"])
        try await GatewayHarness.with(options) { harness in
            let browser = harness.browser()
            try await browser.login()
            let refused = try await browser.send("CONNECT", "/api/tunnel", csrf: true)
            #expect(refused.status == 405)
            let echo = try await browser.send("GET", "/api/echo", csrf: true, headers: [
                ("X-Real-IP", "198.51.100.7"), ("X-Original-URL", "/admin"), ("X-Forwarded-Host", "evil.example"),
                ("Forwarded", "for=198.51.100.9"), ("X-Forwarded-Port", "8443"),
            ])
            #expect(echo.status == 200)
            let answer = try #require(echo.json)
            let pairs = try #require(answer["headers"] as? [[String]])
            let names = Set(pairs.compactMap { $0.first?.lowercased() })
            for name in ["x-real-ip", "x-original-url", "forwarded", "x-forwarded-port"] {
                #expect(!names.contains(name), "\(name) reached the https upstream")
            }
            let forwardedHost = pairs.filter { $0.first?.lowercased() == "x-forwarded-host" }.compactMap { $0.last }
            #expect(forwardedHost == ["127.0.0.1:\(harness.gatewayPort)"])
        }
        let context = try makeTLSTestContext(upstreamPort: upstream.port)
        let tunnels = try await Self.requests(upstream, context: context).filter { $0.1.hasSuffix("/tunnel") }
        #expect(tunnels.isEmpty)
    }
}
