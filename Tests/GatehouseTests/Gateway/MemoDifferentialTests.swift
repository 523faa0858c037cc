import Foundation
import GatehouseCore
import HTTP1
import Testing
import TestSupport
@testable import Gatehouse

/// The speed layer (every memo behind `SpeedLayer`: the server's and the upstream connections'
/// repeated field lines, the upstream's last framing decision, the per-connection memos, the loops'
/// bearer copies) changes nothing a browser or an upstream can see: seeded random request sequences on one keep-alive connection — session cookies
/// swapped, removed, duplicated, a planted one first; routes, methods and bodies mixed; the same
/// field lines repeated or changed; time moving past the cache's age and the access token's
/// lifetime (a refresh); a logout in between; two configuration reloads that turn `/alice`'s rule
/// to Bob and back — give the same upstream requests (the test upstream
/// echoes them) and the same browser answers with the speed layer on and off, as
/// `HeadFieldReuseTests` does for the parser. `MEMO_SEED` replays one seed.
@Suite("Speed layer: the same answers with the memos on and off")
struct MemoDifferentialTests {
    static let seeds: [UInt64] = {
        if let text = ProcessInfo.processInfo.environment["MEMO_SEED"], let seed = UInt64(text) { return [seed] }
        return [0x5EED_0001, 0x5EED_0002, UInt64.random(in: 1...UInt64.max)]
    }()

    static let steps = 48

    @Test("seeded sequences on one keep-alive connection", arguments: seeds)
    func sameAnswers(seed: UInt64) async throws {
        let clock = ManualClock()
        try await GatewayHarness.with(HarnessOptions(accessTokenLifetime: 120, clock: clock)) { harness in
            let context = try #require(harness.gateway?.context)
            var transcripts: [[String]] = []
            for memos in [true, false] {
                context.speedLayer.set(memos)
                transcripts.append(try await Self.run(seed: seed, harness: harness, clock: clock))
            }
            context.speedLayer.set(true)
            if let path = ProcessInfo.processInfo.environment["MEMO_TRANSCRIPT"] {
                try transcripts[0].joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
            }
            // The sequence ran to its end on one connection (a closed connection would cut it short).
            #expect(transcripts[0].count == Self.steps + 6, "seed \(seed): \(transcripts[0].last ?? "no step")")
            #expect(transcripts[0].count == transcripts[1].count, "seed \(seed) (MEMO_SEED=\(seed) replays it)")
            for (step, (on, off)) in zip(transcripts[0], transcripts[1]).enumerated() where on != off {
                Issue.record("seed \(seed) (MEMO_SEED=\(seed) replays it), step \(step):\n memos on:  \(on)\n memos off: \(off)")
                break
            }
        }
    }

    /// One run of the sequence `seed` draws, from two fresh sign-ins: each step's answer, normalised
    /// (session cookies, tokens, trace ids and dates are per run; everything else must be equal).
    static func run(seed: UInt64, harness: GatewayHarness, clock: ManualClock) async throws -> [String] {
        var random = SplitMix64(seed: seed)
        let alice = harness.browser(), bob = harness.browser()
        let a = try await alice.login(username: "alice").sessionCookie
        let b = try await bob.login(username: "bob").sessionCookie
        let name = harness.cookieName
        let planted = String(repeating: "A", count: 43)
        let cookieSets: [(label: String, value: String?)] = [
            ("A", "\(name)=\(a)"), ("B", "\(name)=\(b)"), ("none", nil), ("A+B", "\(name)=\(a); \(name)=\(b)"),
            ("planted+A", "\(name)=\(planted); \(name)=\(a)"), ("A+theme", "theme=dark; \(name)=\(a)"),
            ("B+A", "\(name)=\(b); \(name)=\(a)"),
        ]
        let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        var normaliser = Normaliser(sessions: [a: "<A>", b: "<B>"], ourTraceID: "4bf92f3577b34da6a3ce929d0e0e4736")
        let client = try await RawClient(port: harness.gatewayPort)
        defer { client.close() }
        var fields: [(String, String)] = []
        var transcript: [String] = []
        var loggedOutB = false
        let runtime = try #require(harness.gateway)
        for step in 0..<steps {
            // A reload at two fixed steps: `/alice` admits Bob, then Alice again. No loop may keep
            // serving a rule, a session id or a bearer copy of the configuration it replaced.
            if step == 16 || step == 32 {
                var next = runtime.context.configuration
                let upstream = try #require(next.routes.first { $0.prefix == "/api" }).upstream
                let rule = step == 16 ? "sub:bob" : "sub:alice"
                next.routes = next.routes.filter { $0.prefix != "/alice" }
                    + UpstreamRoute.parseList("/alice=\(upstream)/api;allow=\(rule)").routes
                let outcome = await runtime.reload(to: next)
                transcript.append("reload \(rule): \(outcome)")
                // Both users at once on this kept-alive connection: the new rule decides.
                for (label, cookie) in [("B", b), ("A", a)] {
                    let probe = "GET /alice/echo?after=\(step) HTTP/1.1\r\nHost: 127.0.0.1:\(harness.gatewayPort)\r\n"
                        + "Cookie: \(name)=\(cookie)\r\nX-CSRF: 1\r\n\r\n"
                    try await client.send(Array(probe.utf8))
                    let response = try await client.readResponse(method: "GET", timeout: 10)
                    transcript.append("GET /alice/echo as \(label) after reload -> \(response.status)")
                }
            }
            // Half the time the browser sends the very field lines it sent before (what the memos key on).
            if step == 0 || random.next() % 2 == 0 {
                fields = [("Host", "127.0.0.1:\(harness.gatewayPort)")]
                let cookies = cookieSets[Int(random.next() % UInt64(cookieSets.count))]
                if let value = cookies.value { fields.append(("Cookie", value)) }
                if random.next() % 4 != 0 { fields.append(("X-CSRF", "1")) }
                if random.next() % 3 == 0 { fields.append(("traceparent", trace)) }
                if random.next() % 4 == 0 { fields.append(("tracestate", "vendor=1")) }
                if random.next() % 4 == 0 { fields.append(("X-Forwarded-For", "203.0.113.9")) }
                if random.next() % 5 == 0 { fields.append(("Accept", "text/html")) }
                fields.append(("X-Step-Fields", cookies.label))
            }
            switch random.next() % 12 {
            case 0: clock.advance(seconds: 0.3)
            case 1: clock.advance(seconds: 1)
            case 2 where step > 10: clock.advance(seconds: 130)  // past the access token: a refresh
            default: break
            }
            var method = "GET", target = "/api/echo?step=\(step)", body: [UInt8] = []
            switch random.next() % 11 {
            case 0, 1, 2: break
            case 9: target = "/alice/echo?step=\(step)"  // allow=sub:alice: Alice's loop copy carries the verdict
            case 3: method = "POST"; body = Array("{\"step\":\(step)}".utf8)
            case 4: method = "HEAD"
            case 5: target = "/api/set-cookie"
            case 6: target = "/user?slide=false"
            case 7: target = "/"
            case 8: method = "PUT"; body = Array(repeating: UInt8(ascii: "x"), count: Int(random.next() % 3000))
            default:
                if !loggedOutB && step > 20 {
                    // Bob signs out on this connection: his cookie must stop working at once.
                    method = "POST"; target = "/logout"
                    fields = [("Host", "127.0.0.1:\(harness.gatewayPort)"), ("Cookie", "\(name)=\(b)"), ("X-CSRF", "1")]
                    loggedOutB = true
                }
            }
            var request = "\(method) \(target) HTTP/1.1\r\n"
            for (field, value) in fields { request += "\(field): \(value)\r\n" }
            if !body.isEmpty || method == "POST" || method == "PUT" { request += "Content-Length: \(body.count)\r\n" }
            request += "\r\n"
            try await client.send(Array(request.utf8) + body)
            let response = try await client.readResponse(method: method, timeout: 10)
            transcript.append("\(method) \(target) [\(fields.map(\.0).joined(separator: ","))] -> "
                              + normaliser.describe(response, target: target))
            if response.headers["Connection"]?.lowercased() == "close" { break }
        }
        return transcript
    }
}

/// Replaces what differs between two runs of one sequence by names that do not: the session
/// cookies, the access tokens (numbered in order of appearance, so a stale token shows as a wrong
/// number), JWTs, fresh trace ids, dates.
private struct Normaliser {
    var sessions: [String: String]
    let ourTraceID: String
    var tokens: [String: String] = [:]

    mutating func describe(_ response: RawResponse, target: String) -> String {
        var parts = ["\(response.status)"]
        for field in response.headers where !["date", "content-length"].contains(field.name.lowercased()) {
            parts.append("\(field.name): \(scrub(field.value))")
        }
        if target.hasPrefix("/user"), let json = response.json {
            parts.append("sub=\(json["sub"] as? String ?? "-") error=\(json["error"] as? String ?? "-")")
        } else if let echoed = try? JSONDecoder().decode(EchoedRequest.self, from: Data(response.body)) {
            parts.append("upstream \(echoed.method) \(echoed.path)?\(echoed.query ?? "") body=\(echoed.bodyLength)/\(echoed.bodySHA256.prefix(8))")
            for header in echoed.headers where header.count == 2 {
                parts.append("  > \(header[0]): \(upstreamValue(header[0], header[1]))")
            }
        } else {
            parts.append("body " + scrub(response.text))
        }
        return parts.joined(separator: " | ")
    }

    private mutating func upstreamValue(_ name: String, _ value: String) -> String {
        switch name.lowercased() {
        case "authorization":
            if tokens[value] == nil { tokens[value] = "<token \(tokens.count + 1)>" }
            return tokens[value]!
        case "traceparent":
            return value.contains(ourTraceID) ? "<our trace>" : "<fresh trace>"
        default:
            return scrub(value)
        }
    }

    private func scrub(_ text: String) -> String {
        var out = text
        for (value, label) in sessions { out = out.replacingOccurrences(of: value, with: label) }
        // JWTs (an id_token_hint in a logout redirect) and anything else run-specific in them.
        out = out.replacingOccurrences(of: #"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"#, with: "<jwt>",
                                       options: .regularExpression)
        // The logout redirect's `state` is fresh for each logout.
        out = out.replacingOccurrences(of: #"([?&]state=)[A-Za-z0-9_-]+"#, with: "$1<state>", options: .regularExpression)
        return out
    }
}
