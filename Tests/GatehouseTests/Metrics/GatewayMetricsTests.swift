import Testing
@testable import Gatehouse

@Suite("Prometheus exposition of the gateway's metrics")
struct GatewayMetricsTests {
    @Test("Counters carry HELP/TYPE lines and labelled samples in a stable order")
    func countersAndLabels() {
        let metrics = GatewayMetrics()
        metrics.loginStarted()
        metrics.loginFailed(reason: "unknown_or_expired_state")
        metrics.loginFailed(reason: "iss_mismatch")
        metrics.refreshFailed(reason: "invalid_grant")
        metrics.activeSessions.set(3)
        let text = metrics.render()
        #expect(text.contains("# TYPE gatehouse_logins_started_total counter\ngatehouse_logins_started_total 1\n"))
        #expect(text.contains("""
            gatehouse_logins_failed_total{reason="iss_mismatch"} 1
            gatehouse_logins_failed_total{reason="unknown_or_expired_state"} 1
            """))
        #expect(text.contains("gatehouse_token_refreshes_total{result=\"failed\",reason=\"invalid_grant\"} 1\n"))
        #expect(text.contains("# TYPE gatehouse_active_sessions gauge\ngatehouse_active_sessions 3\n"))
    }

    @Test("The latency histogram is cumulative and ends with +Inf equal to the count")
    func histogram() {
        let metrics = GatewayMetrics()
        metrics.recordRequest(.api, status: 200, durationNanoseconds: 2_000_000)
        metrics.recordRequest(.api, status: 502, durationNanoseconds: 20_000_000_000)
        let text = metrics.render()
        #expect(text.contains("gatehouse_http_request_duration_seconds_bucket{route=\"api\",le=\"0.0025\"} 1\n"))
        #expect(text.contains("gatehouse_http_request_duration_seconds_bucket{route=\"api\",le=\"+Inf\"} 2\n"))
        #expect(text.contains("gatehouse_http_request_duration_seconds_count{route=\"api\"} 2\n"))
        #expect(text.contains("gatehouse_http_requests_total{route=\"api\",status=\"5xx\"} 1\n"))
        #expect(!text.contains("gatehouse_active_sessions"))
    }
}
