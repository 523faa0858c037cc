import Foundation
import Testing
import TestSupport
@testable import Gatehouse
import GatehouseCore
import GatehouseOIDC

/// Bounds under overload (issue #38): calls past a route's in-flight bound are refused at once
/// with `503` and `Retry-After` instead of queued behind a slow upstream; the slots come back as
/// calls end.
@Suite("Gateway: overload bounds")
struct OverloadTests {
    @Test("past GATEHOUSE_ROUTE_MAX_IN_FLIGHT a call is refused at once with 503, then admitted again")
    func routeInFlightBound() async throws {
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_ROUTE_MAX_IN_FLIGHT": "1"])) { harness in
            let browser = harness.browser()
            try await browser.login()
            let loops = ProcessInfo.processInfo.activeProcessorCount
            let answers = try await withThrowingTaskGroup(of: (Int, String?, String?).self) { group in
                for _ in 0..<(loops + 4) {
                    group.addTask {
                        let answer = try await browser.get("/api/slow", csrf: true)
                        return (answer.status, answer.json?["error"] as? String, answer.headers["Retry-After"])
                    }
                }
                var all: [(Int, String?, String?)] = []
                for try await answer in group { all.append(answer) }
                return all
            }
            let admitted = answers.filter { $0.0 == 200 }
            let refused = answers.filter { $0.0 == 503 }
            // One slot per event loop: at most one call per loop reached the upstream.
            #expect(!admitted.isEmpty && admitted.count <= loops, "\(answers)")
            #expect(admitted.count + refused.count == answers.count, "\(answers)")
            #expect(refused.allSatisfy { $0.1 == "overloaded" && $0.2 == "1" }, "\(refused)")
            #expect(harness.upstream.requests.filter { $0.path == "/api/slow" }.count == admitted.count)
            // The slots came back with the answers, whichever way each call went (sent from the loop
            // on a pooled connection, or from a task): with one slot per loop, a leaked one would
            // refuse every later call on its loop.
            for _ in 0..<20 {
                #expect(try await browser.get("/api/echo", csrf: true).status == 200)
                #expect(try await browser.send("POST", "/api/echo", csrf: true, body: .bytes(Array("x".utf8))).status == 200)
            }
            #expect(try await harness.send("GET", "/metrics").text.contains("overloaded"))
        }
    }

    @Test("route option max_in_flight parses, overrides the default and refuses nonsense")
    func routeOption() throws {
        let (routes, errors) = UpstreamRoute.parseList("/api=http://up;max_in_flight=3,/b=http://b;auth=none")
        #expect(errors.isEmpty)
        #expect(routes.first { $0.prefix == "/api" }?.maxInFlight == 3)
        #expect(routes.first { $0.prefix == "/b" }?.maxInFlight == nil)
        for bad in ["0", "-1", "x", "1000001"] {
            #expect(!UpstreamRoute.parseList("/api=http://up;max_in_flight=\(bad)").errors.isEmpty, "\(bad)")
        }
    }

    @Test("the bounds' variables: defaults, values, refusals naming the variable")
    func variables() throws {
        let base = ["GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa"]
        let defaults = try GatehouseConfiguration.load(environment: base, requireSecretKey: false).get()
        #expect(defaults.routeMaxInFlight == 512 && defaults.providerMaxInFlight == 64)
        #expect(defaults.storeQueue == 4_096 && defaults.storeTimeout == 10)
        let set = try GatehouseConfiguration.load(environment: base.merging([
            "GATEHOUSE_ROUTE_MAX_IN_FLIGHT": "8", "GATEHOUSE_PROVIDER_MAX_IN_FLIGHT": "4",
            "GATEHOUSE_STORE_QUEUE": "16", "GATEHOUSE_STORE_TIMEOUT": "3s",
        ]) { $1 }, requireSecretKey: false).get()
        #expect(set.routeMaxInFlight == 8 && set.providerMaxInFlight == 4 && set.storeQueue == 16 && set.storeTimeout == 3)
        for name in ["GATEHOUSE_ROUTE_MAX_IN_FLIGHT", "GATEHOUSE_PROVIDER_MAX_IN_FLIGHT", "GATEHOUSE_STORE_QUEUE"] {
            guard case .failure(let errors) = GatehouseConfiguration.load(environment: base.merging([name: "0"]) { $1 },
                                                                         requireSecretKey: false) else {
                Issue.record("\(name)=0 accepted")
                continue
            }
            #expect(errors.issues.contains { $0.variable == name })
        }
    }

    @Test("past GATEHOUSE_PROVIDER_MAX_IN_FLIGHT a provider call fails at once")
    func providerBound() async throws {
        let server = try await offPool { try LocalTestServer() }
        defer { server.stop() }
        let client = HTTPProviderClient(timeout: 5, maxInFlight: 1)
        // `/slow` keeps the first call in flight while the second is tried.
        let first = Task { try await client.send(ProviderHTTPRequest(method: .get, url: server.url("/slow"))) }
        // Asked again until the first call is seen in flight (bounded: it ends after 3 s).
        var outcome = "not seen"
        for _ in 0..<50 where outcome != ProviderTransportError.overloaded(limit: 1).description {
            try await Task.sleep(for: .milliseconds(50))
            do {
                _ = try await client.send(ProviderHTTPRequest(method: .get, url: server.url("/echo")))
            } catch {
                outcome = "\(error)"
            }
        }
        #expect(outcome == ProviderTransportError.overloaded(limit: 1).description)
        _ = await first.result
        // The slot came back: the provider is asked again (its answer, whatever it is).
        _ = try await client.send(ProviderHTTPRequest(method: .get, url: server.url("/echo")))
    }
}
