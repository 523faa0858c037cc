import Synchronization

/// The calls in flight on one route, counted per event loop (each loop's copy of the route has its
/// own count, so it stays in that loop's core's cache): admission control under overload. A call
/// past the bound is refused at once instead of queued without bound behind a slow upstream.
public final class InFlightCount: Sendable {
    private let count = Atomic<Int>(0)

    public init() {}

    /// Counts one more call unless `limit` are in flight already.
    /// - Returns: whether the call was admitted (then `leave` once it is over).
    public func enter(limit: Int) -> Bool {
        let now = count.add(1, ordering: .relaxed).newValue
        guard now <= limit else {
            count.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    public func leave() {
        count.subtract(1, ordering: .relaxed)
    }

    /// The calls in flight now (tests, metrics).
    public var current: Int { count.load(ordering: .relaxed) }
}
