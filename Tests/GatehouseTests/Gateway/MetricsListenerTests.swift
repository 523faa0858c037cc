import Foundation
import GatehouseCore
import Testing
import TestSupport

/// `GATEHOUSE_METRICS_LISTEN` (SPEC "Operations"): `/metrics` only on its own listener, the public
/// port answering 404 there.
@Suite("Gateway: the metrics listener")
struct MetricsListenerTests {
    @Test("/metrics on GATEHOUSE_METRICS_LISTEN only; the public port answers 404; nothing else there")
    func metricsOnTheirOwnPort() async throws {
        let reservation = try PortReservation()
        let port = reservation.port
        try await GatewayHarness.with(HarnessOptions(environment: ["GATEHOUSE_METRICS_LISTEN": "127.0.0.1:\(port)"])) { harness in
            let publicAnswer = try await harness.send("GET", "/metrics")
            #expect(publicAnswer.status == 404)
            #expect(!publicAnswer.text.contains("gatehouse_"))
            let scraped = try await RawHTTPClient.send(port: port, method: "GET", target: "/metrics")
            #expect(scraped.status == 200)
            #expect(scraped.text.contains("gatehouse_active_sessions"))
            #expect(try await RawHTTPClient.send(port: port, method: "GET", target: "/healthz").status == 404)
            #expect(try await RawHTTPClient.send(port: port, method: "POST", target: "/metrics").status == 405)
            // The public port's own probes are unchanged.
            #expect(try await harness.send("GET", "/healthz").status == 200)
        }
        _ = reservation
    }

    @Test("GATEHOUSE_METRICS_LISTEN on the public port is refused, naming the variable")
    func samePortRefused() {
        guard case .failure(let errors) = GatehouseConfiguration.load(environment: [
            "GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa",
            "GATEHOUSE_LISTEN": "0.0.0.0:8080", "GATEHOUSE_METRICS_LISTEN": "127.0.0.1:8080",
        ], requireSecretKey: false) else {
            Issue.record("accepted")
            return
        }
        #expect(errors.issues.contains { $0.variable == "GATEHOUSE_METRICS_LISTEN" })
    }
}
