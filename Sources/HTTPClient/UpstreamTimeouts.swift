/// The time limits of one upstream exchange, the same for the `http://` and the `https://` client.
/// Silence while waiting for the browser (a slow upload, a slow reader) does not count.
public struct UpstreamTimeouts: Sendable {
    public var connectNanoseconds: UInt64 = 5_000_000_000
    /// Longest upstream silence before the response head.
    public var firstByteNanoseconds: UInt64 = 30_000_000_000
    /// Longest upstream silence inside a response body (server-sent events may pause between events).
    public var bodyIdleNanoseconds: UInt64 = 300_000_000_000

    public init() {}
}
