import EventLoops
import Gatehouse
import GatehouseCore
import HTTP1
import Logging
import Testing
@testable import HTTPServer

@Suite("Access log: one line per request carries the W3C trace id")
struct AccessLogTraceTests {
    private func logLine(traceID: TraceID?) -> String? {
        let (output, lines) = LogOutput.collecting()
        let logger = Logger(label: "gatehouse") { label in
            LogBootstrap.makeHandler(label: label, level: .info, format: .json, output: output)
        }
        let observer = GatewayObserver(metrics: GatewayMetrics(), logger: logger) { _ in .api }
        var record = HTTPAccessRecord(method: "GET", path: "/api/x", status: 200, bytesSent: 2, durationNanoseconds: 1_000,
                                      requestID: RequestID(loop: 0, number: 1), peer: PeerAddress(ip: "192.0.2.1", port: 1))
        record.traceID = traceID
        observer.requestCompleted(record)
        return lines().first
    }

    @Test("The trace id is written as 32 lowercase hex digits under trace.id")
    func carriesTraceID() throws {
        let trace = try #require(TraceParent(parsing: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        let line = try #require(logLine(traceID: trace.traceID))
        #expect(line.contains("\"trace.id\":\"4bf92f3577b34da6a3ce929d0e0e4736\""), "\(line)")
        #expect(!line.contains("00f067aa0ba902b7"), "the parent id is not the trace id")
    }

    @Test("A request refused before parsing has no trace id, and the line says nothing about one")
    func noTrace() throws {
        #expect(try #require(logLine(traceID: nil)).contains("trace.id") == false)
    }

    @Test("The server gives every request it hands to a handler the trace of its head")
    func requestTrace() {
        let head = HTTPRequestHead(method: "GET", target: "/api/x", version: .http1_1,
                                   headers: ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"])
        #expect(HTTPRequest(head: head).trace.traceID.description == "4bf92f3577b34da6a3ce929d0e0e4736")
    }
}
