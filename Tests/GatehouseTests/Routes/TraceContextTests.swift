import Dispatch
import Synchronization
import Testing
import HTTP1
@testable import GatehouseCore

@Suite("W3C Trace Context (traceparent §3.2, tracestate §3.3)")
struct TraceContextTests {
    static let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test("A version-00 header parses into its fields and is kept byte for byte")
    func parsesVersion00() throws {
        let trace = try #require(TraceParent(parsing: Self.valid))
        #expect(trace.traceID == TraceID(high: 0x4bf9_2f35_77b3_4da6, low: 0xa3ce_929d_0e0e_4736))
        #expect(trace.traceID.description == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(trace.parentID == 0x00f0_67aa_0ba9_02b7)
        #expect(trace.flags == 0x01)
        #expect(trace.isReceived)
        #expect(trace.headerValue == Self.valid)
    }

    @Test("Invalid version-00 headers", arguments: [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",          // 54 chars
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",        // 56 chars for version 00
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",   // extra fields for version 00
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",         // uppercase trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",         // uppercase parent id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",         // uppercase flags
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",         // zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",         // zero parent id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",         // version ff
        "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",         // version not hex
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",         // wrong separator
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",         // not hex
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\u{0}",
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01",
    ])
    func refusesInvalid(_ value: String) {
        #expect(TraceParent(parsing: value) == nil)
    }

    @Test("A later version is read by the version-00 layout and passed on whole (§3.2.4)")
    func laterVersions() throws {
        let longer = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds"
        let trace = try #require(TraceParent(parsing: longer))
        #expect(trace.headerValue == longer)
        #expect(TraceParent(parsing: "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") != nil)
        #expect(TraceParent(parsing: "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x") == nil)
    }

    @Test("Ids are written as lowercase hex, most significant digit first, every digit and width")
    func hexDigits() {
        func hex(_ v: UInt64) -> String {
            let digits = String(v, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        var values: [UInt64] = [0, 1, 9, 10, 15, 16, 0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210, .max, 0x8000_0000_0000_0000]
        for shift in 0..<64 { values.append(1 << UInt64(shift)) }
        for v in values {
            let parent = TraceParent(traceID: TraceID(high: v, low: ~v), parentID: v &* 0x9E37_79B9_7F4A_7C15, flags: 1)
            #expect(parent.headerValue == "00-\(hex(v))\(hex(~v))-\(hex(v &* 0x9E37_79B9_7F4A_7C15))-01", "\(v)")
            #expect(parent.traceID.description == hex(v) + hex(~v))
        }
    }

    @Test("A fresh trace is valid version 00, sampled, and different each time")
    func fresh() throws {
        var seen = Set<TraceID>()
        for _ in 0..<1000 {
            let trace = TraceParent.fresh()
            #expect(!trace.isReceived)
            let value = trace.headerValue
            #expect(value.utf8.count == 55)
            let reparsed = try #require(TraceParent(parsing: value), "\(value)")
            #expect(reparsed.traceID == trace.traceID && reparsed.parentID == trace.parentID)
            #expect(value.hasPrefix("00-") && value.hasSuffix("-01"))
            seen.insert(trace.traceID)
        }
        #expect(seen.count == 1000)
    }

    @Test("Fresh traces made on several threads at once never repeat (each thread its own key and counter)")
    func freshAcrossThreads() {
        let perThread = 5_000
        let made = Mutex<[TraceParent]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let traces = (0..<perThread).map { _ in TraceParent.fresh() }
            made.withLock { $0.append(contentsOf: traces) }
        }
        let traces = made.withLock { $0 }
        #expect(traces.count == 4 * perThread)
        #expect(Set(traces.map(\.traceID)).count == traces.count)
        #expect(Set(traces.map(\.parentID)).count == traces.count)
        #expect(!traces.contains { $0.traceID.high == 0 || $0.traceID.low == 0 || $0.parentID == 0 })
    }

    @Test("From request headers: one valid field is continued; none, several or an invalid one start afresh")
    func continuing() {
        #expect(TraceParent.continuing(["TraceParent": Self.valid]).headerValue == Self.valid)
        #expect(!TraceParent.continuing([:]).isReceived)
        #expect(!TraceParent.continuing(["traceparent": "00-zz"]).isReceived)
        let twice = HTTPHeaders([("traceparent", Self.valid), ("traceparent", Self.valid)])
        #expect(!TraceParent.continuing(twice).isReceived)
    }

    private func upstreamHeaders(_ incoming: HTTPHeaders) -> HTTPHeaders {
        let forwarding = ProxyForwarding(forwardedHost: "app.example", forwardedProto: "https", trustedProxies: [], csrfHeader: "X-CSRF")
        return ProxyHeaderPolicy.upstreamRequestHeaders(from: incoming, peerIP: "192.0.2.1", authorization: nil,
                                                        forwarding: forwarding, trace: TraceParent.continuing(incoming))
    }

    @Test("Upstream: a valid traceparent and its tracestate pass untouched")
    func passesValid() {
        let out = upstreamHeaders(HTTPHeaders([("traceparent", Self.valid), ("tracestate", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"),
                                               ("tracestate", "x=1")]))
        #expect(out.values("traceparent") == [Self.valid])
        #expect(out.values("tracestate") == ["congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", "x=1"])
        #expect(out["Authorization"] == nil, "no bearer when the policy gives none")
    }

    @Test("Upstream: an invalid traceparent is replaced by a fresh one and its tracestate dropped")
    func replacesInvalid() throws {
        let bad = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"
        let out = upstreamHeaders(HTTPHeaders([("traceparent", bad), ("tracestate", "congo=t61rcWkgMzE")]))
        let sent = try #require(out["traceparent"])
        #expect(out.values("traceparent").count == 1)
        #expect(sent != bad && TraceParent(parsing: sent) != nil)
        #expect(out["tracestate"] == nil)
    }

    @Test("Upstream: without a traceparent one is created; a lone tracestate is dropped")
    func creates() throws {
        let out = upstreamHeaders(["tracestate": "congo=t61rcWkgMzE"])
        #expect(TraceParent(parsing: try #require(out["traceparent"])) != nil)
        #expect(out["tracestate"] == nil)
    }
}
