/// The time limits of one upstream exchange, the same for the `http://` and the `https://` client.
/// Silence while waiting for the browser (a slow upload, a slow reader) does not count.
public struct UpstreamTimeouts: Sendable {
    public var connectNanoseconds: UInt64 = 5_000_000_000
    /// Longest upstream silence before the response head.
    public var firstByteNanoseconds: UInt64 = 30_000_000_000
    /// Longest upstream silence inside a response body (server-sent events may pause between events).
    public var bodyIdleNanoseconds: UInt64 = 300_000_000_000
    /// When set (monotonic nanoseconds, `EventLoop.monotonicNow()`), the connect and the wait for
    /// the head are cut to end by then: a whole-exchange limit (`FetchClient`).
    public var deadline: UInt64?

    /// The limits with each wait cut to what is left before `deadline`, measured `now`.
    func cut(now: UInt64) -> UpstreamTimeouts {
        guard let deadline else { return self }
        let left = deadline > now ? deadline - now : 0
        var cut = self
        cut.connectNanoseconds = min(connectNanoseconds, left)
        cut.firstByteNanoseconds = min(firstByteNanoseconds, left)
        return cut
    }

    public init() {}
}
