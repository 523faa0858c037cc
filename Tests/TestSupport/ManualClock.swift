import Foundation
import GatehouseTime
import Synchronization

/// A ``GatewayClock`` the test moves by hand: wall and monotonic readings advance together and only
/// when told, so an expiry or timeout test moves time past the limit instead of sleeping until it.
public final class ManualClock: GatewayClock {
    /// Nanoseconds since the Unix epoch, and since the clock was made.
    private let state: Mutex<(wall: Int64, elapsed: UInt64)>

    public init(unixSeconds: Int64 = 1_750_000_000) {
        state = Mutex((unixSeconds * 1_000_000_000, 0))
    }

    public func unixNanoseconds() -> Int64 { state.withLock { $0.wall } }

    /// Starts at 1 s (a real monotonic clock is well past 0), then moves with ``advance(seconds:)``.
    public func monotonicNanoseconds() -> UInt64 { 1_000_000_000 + state.withLock { $0.elapsed } }

    /// Wall time as a `Date`, for the OIDC layer and the development provider.
    public func now() -> Date { Date(timeIntervalSince1970: unixTime()) }

    /// Moves both readings forward by `seconds` (fractions allowed; a negative value is ignored).
    public func advance(seconds: Double) {
        let nanoseconds = Int64(max(0, seconds) * 1e9)
        state.withLock {
            $0.wall += nanoseconds
            $0.elapsed += UInt64(nanoseconds)
        }
    }
}
