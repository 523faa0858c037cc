#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the gateway reads the time. Two readings, because they answer different questions:
///
/// - wall time, `unixNanoseconds()` (and `unixSeconds()`): since the Unix epoch, UTC. What sessions,
///   cookies, pending logins and JWT claims (`exp`, `iat`: NumericDate, RFC 7519 §2) are measured
///   against; it may jump when the system clock is set.
/// - `monotonicNanoseconds()`: never goes backwards, from an arbitrary origin. What timeouts, cache
///   ages and back-offs are measured in.
///
/// Code that needs the time takes a clock (``SystemClock`` by default) instead of calling `Date()` or
/// `clock_gettime`; tests pass a manual clock and move it past a limit instead of sleeping.
public protocol GatewayClock: Sendable {
    func unixNanoseconds() -> Int64
    func monotonicNanoseconds() -> UInt64
}

extension GatewayClock {
    /// Whole seconds since the Unix epoch (rounded down, also before 1970).
    public func unixSeconds() -> Int64 {
        let nanoseconds = unixNanoseconds()
        return nanoseconds >= 0 ? nanoseconds / 1_000_000_000 : (nanoseconds + 1) / 1_000_000_000 - 1
    }

    /// Seconds since the Unix epoch with their fraction, as `Date(timeIntervalSince1970:)` takes them.
    public func unixTime() -> Double { Double(unixNanoseconds()) / 1e9 }
}

/// The operating system's clocks (`CLOCK_REALTIME`, `CLOCK_MONOTONIC`).
public struct SystemClock: GatewayClock {
    public init() {}

    public func unixNanoseconds() -> Int64 { Int64(bitPattern: Self.read(CLOCK_REALTIME)) }

    public func monotonicNanoseconds() -> UInt64 { Self.monotonicNanoseconds() }

    /// Without an instance: the event loops read it after every wait.
    @inline(__always)
    public static func monotonicNanoseconds() -> UInt64 { read(CLOCK_MONOTONIC) }

    @inline(__always)
    private static func read(_ id: clockid_t) -> UInt64 {
        var ts = timespec()
        clock_gettime(id, &ts)
        return UInt64(bitPattern: Int64(ts.tv_sec)) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}
