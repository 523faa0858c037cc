/// Whether this hop's spans of a trace are recorded: the OpenTelemetry samplers
/// (`OTEL_TRACES_SAMPLER`, SDK specification "Built-in samplers"), as a value the server asks once
/// per request while it reads the head.
public struct TraceSampling: Sendable, Equatable {
    public enum Root: Sendable, Equatable {
        case alwaysOn
        case alwaysOff
        /// Sampled when the trace id's random low half falls under `ratio` of its range.
        case traceIDRatio(Double)
    }

    /// The decision for a trace without a received parent (and, unless `parentBased`, for all).
    public var root: Root
    /// A received `traceparent`'s sampled flag decides (`parentbased_*`).
    public var parentBased: Bool

    public init(root: Root, parentBased: Bool) {
        self.root = root
        self.parentBased = parentBased
    }

    /// The decision for `trace` (as received or fresh).
    public func samples(_ trace: TraceParent) -> Bool {
        if parentBased, trace.isReceived { return trace.flags & 0x01 != 0 }
        switch root {
        case .alwaysOn: return true
        case .alwaysOff: return false
        case .traceIDRatio(let ratio):
            // The specification's deterministic rule: the same trace id, the same decision on every
            // service with the same ratio; the low 63 bits against the ratio of their range.
            guard ratio < 1 else { return ratio >= 1 }
            guard ratio > 0 else { return false }
            let bound = UInt64(ratio * Double(UInt64(1) << 63))
            return trace.traceID.low & (UInt64.max >> 1) < bound
        }
    }
}

/// The trace of the request the current task serves, when its spans are recorded: what a
/// provider call or a store operation made for that request takes as its parent.
public enum TraceContext {
    @TaskLocal public static var current: TraceParent?
}
