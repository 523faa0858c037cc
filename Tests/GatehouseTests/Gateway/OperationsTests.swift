import Foundation
import Testing
import TestSupport

/// `/healthz`, `/readyz`, `/metrics`.
@Suite("Gateway: operations endpoints")
struct OperationsTests {
    @Test("/readyz is 503 while the provider is down and 200 once its metadata is loaded")
    func readiness() async throws {
        try await GatewayHarness.with(HarnessOptions(startProvider: false)) { harness in
            // SPEC Operations: "GET /readyz (200 when the database answers and the provider's metadata
            // is loaded, else 503)", "GET /healthz (200 while the process runs)".
            let down = try await harness.send("GET", "/readyz")
            #expect(down.status == 503)
            #expect(try await harness.send("GET", "/healthz").status == 200)
            // The gateway starts without its provider and /login explains rather than hangs.
            let login = try await harness.send("GET", "/login")
            #expect(login.status == 502)

            try harness.startProvider()
            // The gateway retries discovery after a back-off (1 s, 2 s, 4 s …).
            #expect(try await eventually(timeout: 30, pollEvery: 100) { try await harness.send("GET", "/readyz").status == 200 })
        }
    }

    @Test("/metrics has request counters by route class and the login counters")
    func metrics() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            #expect(try await browser.get("/user", csrf: true).status == 200)
            #expect(try await browser.get("/api/echo", csrf: true).status == 200)
            _ = try await browser.get("/callback?state=unknown")
            // SPEC Operations: "GET /metrics (Prometheus text format: requests by route class and status,
            // latency histograms, active sessions, logins, refreshes, upstream errors)".
            // Request counters are folded in at the end of each event-loop batch: poll.
            var text = ""
            _ = try await eventually(pollEvery: 50) {
                let response = try await harness.send("GET", "/metrics")
                #expect(response.status == 200)
                #expect(response.headers["Content-Type"]?.hasPrefix("text/plain") == true)
                text = response.text
                return text.contains(#"gatehouse_http_requests_total{route="user",status="2xx"} 1"#)
            }
            #expect(text.contains("# TYPE gatehouse_http_requests_total counter"))
            #expect(text.contains(#"gatehouse_http_requests_total{route="user",status="2xx"} 1"#))
            #expect(text.contains("gatehouse_logins_started_total 1"))
            #expect(text.contains("gatehouse_logins_completed_total 1"))
            #expect(text.contains(#"gatehouse_logins_failed_total{reason="#))
            #expect(text.contains("gatehouse_active_sessions 1"))
            #expect(text.contains("gatehouse_http_request_duration_seconds_bucket"))
        }
    }
}
