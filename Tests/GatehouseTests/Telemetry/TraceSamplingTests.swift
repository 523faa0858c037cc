import HTTP1
import Testing

@Suite("Trace sampling and this hop's span (W3C Trace Context, OpenTelemetry samplers)")
struct TraceSamplingTests {
    static let received = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    private func headers(_ traceparent: String?) -> HTTPHeaders {
        var headers = HTTPHeaders()
        if let traceparent { headers.add("traceparent", traceparent) }
        return headers
    }

    @Test("A received trace is continued: same trace id, the client's span the parent, a span of our own")
    func continued() {
        let trace = TraceParent.continuing(headers(Self.received), sampling: TraceSampling(root: .alwaysOn, parentBased: true))
        #expect(trace.traceID.description == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(trace.parentID == 0x00f0_67aa_0ba9_02b7)
        #expect(trace.span != 0 && trace.span != trace.parentID)
        #expect(trace.recordsSpans && trace.isReceived)
        // The upstream is told of our span, not the client's.
        #expect(trace.headerValue == "00-4bf92f3577b34da6a3ce929d0e0e4736-\(hex(trace.span))-01")
    }

    @Test("Without a received trace: a root span (no parent)")
    func fresh() {
        let trace = TraceParent.continuing(headers(nil), sampling: TraceSampling(root: .alwaysOn, parentBased: true))
        #expect(trace.parentID == 0 && trace.span != 0 && trace.recordsSpans && !trace.isReceived)
    }

    @Test("parentbased follows the client's sampled flag; always_* ignore it")
    func parentBased() {
        let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
        #expect(!TraceParent.continuing(headers(unsampled), sampling: TraceSampling(root: .alwaysOn, parentBased: true)).recordsSpans)
        #expect(TraceParent.continuing(headers(unsampled), sampling: TraceSampling(root: .alwaysOn, parentBased: false)).recordsSpans)
        #expect(!TraceParent.continuing(headers(Self.received), sampling: TraceSampling(root: .alwaysOff, parentBased: false)).recordsSpans)
        #expect(TraceParent.continuing(headers(Self.received), sampling: TraceSampling(root: .alwaysOff, parentBased: true)).recordsSpans)
        // An unsampled request still tells the upstream of this hop (flags 00).
        let quiet = TraceParent.continuing(headers(unsampled), sampling: TraceSampling(root: .alwaysOn, parentBased: true))
        #expect(quiet.headerValue.hasSuffix("-\(hex(quiet.span))-00"))
    }

    @Test("traceidratio: deterministic per trace id, and close to its ratio over many traces")
    func ratio() {
        let sampling = TraceSampling(root: .traceIDRatio(0.1), parentBased: false)
        var sampled = 0
        for _ in 0..<20_000 {
            let trace = TraceParent.fresh()
            let decision = sampling.samples(trace)
            #expect(decision == sampling.samples(trace))
            if decision { sampled += 1 }
        }
        #expect(sampled > 1_500 && sampled < 2_500)
        #expect(!TraceSampling(root: .traceIDRatio(0), parentBased: false).samples(TraceParent.fresh()))
        #expect(TraceSampling(root: .traceIDRatio(1), parentBased: false).samples(TraceParent.fresh()))
    }

    @Test("A child for a call: its own span id, this hop's span its parent, in its header")
    func child() {
        let trace = TraceParent.continuing(headers(Self.received), sampling: TraceSampling(root: .alwaysOn, parentBased: true))
        let call = trace.child(0x1234)
        #expect(call.traceID == trace.traceID && call.parentID == trace.span && call.span == 0x1234 && !call.isReceived)
        #expect(call.headerValue == "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000001234-01")
    }

    @Test("Without sampling (no exporter) a valid received header is forwarded byte for byte, as before")
    func unchangedWithoutExporter() {
        let trace = TraceParent.continuing(headers(Self.received))
        #expect(trace.span == 0 && !trace.recordsSpans && trace.headerValue == Self.received)
    }

    private func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
