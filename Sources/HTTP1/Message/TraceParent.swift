import CByteScan
import CTraceID
import Synchronization

/// A W3C Trace Context trace id: 16 bytes, never all zero, written as 32 lowercase hex digits.
/// Two integers rather than a string: it is formatted only when something logs or forwards it.
public struct TraceID: Sendable, Hashable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) { (self.high, self.low) = (high, low) }

    public var description: String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            TraceParent.writeHex(high, into: buffer, at: 0)
            TraceParent.writeHex(low, into: buffer, at: 16)
            return 32
        }
    }
}

/// The W3C Trace Context `traceparent` of one request (Trace Context Level 1 §3.2):
/// `version "-" trace-id "-" parent-id "-" trace-flags`, e.g.
/// `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.
///
/// A valid header from the client is continued as received (and only then does its `tracestate`
/// travel with it); a missing or invalid one is replaced by a fresh trace. Parsing allocates
/// nothing and a fresh trace costs three keyed hashes: this runs for every request.
public struct TraceParent: Sendable, Equatable {
    public var traceID: TraceID
    public var parentID: UInt64
    public var flags: UInt8
    /// The client's header value when it was valid: forwarded byte for byte (a later version's
    /// extra fields included, §3.2.4) unless this hop has a span of its own (`span`).
    public var received: String?
    /// This hop's own span id when spans are recorded (`TraceSampling`), else 0: then it, not the
    /// client's `parentID`, is the parent the upstream is told of.
    public var span: UInt64 = 0

    /// The header name (§3.2): lowercase, as it is sent.
    public static let headerName = "traceparent"
    /// The companion header (§3.3), passed on untouched beside a valid received `traceparent`.
    public static let stateHeaderName = "tracestate"
    /// `sampled` (§3.2.2.5): a fresh trace asks the services behind the gateway to record it, so
    /// that parent-based samplers there do not drop every request that came through the gateway.
    public static let freshFlags: UInt8 = 0x01

    public init(traceID: TraceID, parentID: UInt64, flags: UInt8, received: String? = nil) {
        self.traceID = traceID
        self.parentID = parentID
        self.flags = flags
        self.received = received
    }

    /// True when this trace came from the client (so its `tracestate` is passed on).
    public var isReceived: Bool { received != nil }

    /// True when this hop's span is recorded and exported (a span id, and sampled).
    public var recordsSpans: Bool { span != 0 && flags & 0x01 != 0 }

    /// The value to send: the client's own when valid and this hop has no span of its own, else
    /// the version-00 form of this trace with this hop's span as the parent.
    public var headerValue: String {
        if span == 0, let received { return received }
        return String(unsafeUninitializedCapacity: 55) { buffer in
            writeVersion00(into: buffer.baseAddress!)
            return 55
        }
    }

    /// Calls `body` with `headerValue`'s bytes (valid only during the call): a fresh trace's value
    /// is written on the stack, no String made for a header sent once.
    func withHeaderValue<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if span == 0, var received { return received.withUTF8(body) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 55) { buffer in
            writeVersion00(into: buffer.baseAddress!)
            return body(UnsafeBufferPointer(buffer))
        }
    }

    /// The 55 bytes of the version-00 form.
    private func writeVersion00(into p: UnsafeMutablePointer<UInt8>) {
        let buffer = UnsafeMutableBufferPointer(start: p, count: 55)
        buffer[0] = UInt8(ascii: "0")
        buffer[1] = UInt8(ascii: "0")
        buffer[2] = UInt8(ascii: "-")
        Self.writeHex(traceID.high, into: buffer, at: 3)
        Self.writeHex(traceID.low, into: buffer, at: 19)
        buffer[35] = UInt8(ascii: "-")
        Self.writeHex(span != 0 ? span : parentID, into: buffer, at: 36)
        buffer[52] = UInt8(ascii: "-")
        buffer[53] = Self.hexDigit(flags >> 4)
        buffer[54] = Self.hexDigit(flags & 0x0f)
    }

    /// The request's trace: the client's `traceparent` when exactly one valid field is present
    /// (§3.2.1: several are invalid), otherwise a fresh one.
    public static func continuing(_ headers: HTTPHeaders) -> TraceParent {
        var fields = 0
        var parsed: TraceParent? = nil
        headers.forEachValueBytes(headerName) { value in
            fields += 1
            // §3.2.1: several are invalid.
            guard fields == 1 else { parsed = nil; return false }
            if let found = parse(value) {
                parsed = TraceParent(traceID: found.traceID, parentID: found.parentID, flags: found.flags,
                                     received: FieldText.value(value))
            }
            return true
        }
        return parsed ?? fresh()
    }

    /// Parses a received value (§3.2.2 for version `00`, §3.2.4 for later versions).
    ///
    /// Version `00` is exactly 55 characters; a later version (`01`…`fe`) is at least 55, and if
    /// longer, continues with `-` after the flags. Hex digits are lowercase; the trace id and the
    /// parent id are not all zeros; version `ff` is invalid.
    /// - Returns: nil when invalid (the caller starts a fresh trace).
    public init?(parsing value: String) {
        var value = value
        guard let parsed = value.withUTF8({ Self.parse($0) }) else { return nil }
        self.init(traceID: parsed.traceID, parentID: parsed.parentID, flags: parsed.flags, received: value)
    }

    private static func parse(_ p: UnsafeBufferPointer<UInt8>) -> (traceID: TraceID, parentID: UInt64, flags: UInt8)? {
        guard p.count >= 55, let version = hexByte(p, 0) else { return nil }
        guard version != 0xff else { return nil }
        if version == 0 {
            guard p.count == 55 else { return nil }
        } else if p.count > 55 {
            guard p[55] == UInt8(ascii: "-") else { return nil }
        }
        guard p[2] == UInt8(ascii: "-"), p[35] == UInt8(ascii: "-"), p[52] == UInt8(ascii: "-"),
              let high = hex64(p, 3), let low = hex64(p, 19), let parent = hex64(p, 36), let flags = hexByte(p, 53),
              high | low != 0, parent != 0
        else { return nil }
        return (TraceID(high: high, low: low), parent, flags)
    }

    /// The trace as this hop continues it when its spans may be recorded: a span id of its own,
    /// a child of the client's span (or the root of a fresh trace, `parentID` 0 then), and the
    /// sampled flag as `sampling` decides.
    public static func continuing(_ headers: HTTPHeaders, sampling: TraceSampling) -> TraceParent {
        var trace = continuing(headers)
        if trace.isReceived {
            trace.span = freshID()
        } else {
            (trace.span, trace.parentID) = (trace.parentID, 0)
        }
        let sampled = sampling.samples(trace)
        trace.flags = sampled ? trace.flags | 0x01 : trace.flags & ~0x01
        return trace
    }

    /// A child of this hop's span for a call it makes (an upstream, a provider): the header that
    /// call carries names `child` as its parent.
    public func child(_ child: UInt64) -> TraceParent {
        var trace = TraceParent(traceID: traceID, parentID: span, flags: flags)
        trace.span = child
        return trace
    }

    /// One new span id (never zero).
    public static func freshID() -> UInt64 {
        var (a, b, c): (UInt64, UInt64, UInt64) = (0, 0, 0)
        if gatehouse_trace_next3(&a, &b, &c) == 0 { (a, b, c) = generator.next3() }
        return a
    }

    // MARK: Fresh traces

    /// A new trace: random trace id and parent id, `freshFlags`.
    public static func fresh() -> TraceParent {
        var (a, b, c): (UInt64, UInt64, UInt64) = (0, 0, 0)
        // The calling thread's generator (`CTraceID`); the shared one only if the kernel gave
        // that thread no randomness for its key.
        if gatehouse_trace_next3(&a, &b, &c) == 0 { (a, b, c) = generator.next3() }
        return TraceParent(traceID: TraceID(high: a, low: b), parentID: c, flags: freshFlags)
    }

    static let generator = TraceIDGenerator()

    // MARK: Hex

    /// Two lowercase hex digits at `offset`, nil otherwise (uppercase is invalid: §3.2.2).
    private static func hexByte(_ p: UnsafeBufferPointer<UInt8>, _ offset: Int) -> UInt8? {
        guard let high = lowerHexValue(p[offset]), let low = lowerHexValue(p[offset + 1]) else { return nil }
        return high << 4 | low
    }

    private static func hex64(_ p: UnsafeBufferPointer<UInt8>, _ offset: Int) -> UInt64? {
        var value: UInt64 = 0
        for i in offset..<(offset + 16) {
            guard let digit = lowerHexValue(p[i]) else { return nil }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    private static func lowerHexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte &- UInt8(ascii: "a") &+ 10
        default: nil
        }
    }

    static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ nibble &- 10
    }

    static func writeHex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        precondition(offset + 16 <= buffer.count)
        gatehouse_hex64(value, buffer.baseAddress! + offset)
    }
}

/// The fallback of `TraceParent.fresh` (the usual ids come from `CTraceID`, per thread).
/// Random-looking, unique 64-bit ids without a system call per request: the standard library's
/// SipHash, keyed with a random per-process seed, of a shared counter that starts at a value from
/// the system CSPRNG (so that two processes differ even under `SWIFT_DETERMINISTIC_HASHING`).
/// Lock-free, one short hash per id; ids cannot be predicted from earlier ones without the seed,
/// and are never zero (W3C §3.2.2.3–4).
final class TraceIDGenerator: Sendable {
    private let counter: Atomic<UInt64>

    init() {
        var system = SystemRandomNumberGenerator()
        counter = Atomic(system.next())
    }

    func next3() -> (UInt64, UInt64, UInt64) {
        let base = counter.wrappingAdd(3, ordering: .relaxed).oldValue
        return (id(base), id(base &+ 1), id(base &+ 2))
    }

    private func id(_ n: UInt64) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(n)
        let value = UInt64(UInt(bitPattern: hasher.finalize()))
        return value == 0 ? 1 : value
    }
}
