import Synchronization

/// The calls in flight on one route, counted per event loop (each loop's copy of the route has its
/// own count, so it stays in that loop's core's cache): admission control under overload. A call
/// past the bound is refused at once instead of queued without bound behind a slow upstream.
///
/// One client (an address, or a session) may not hold more than its share of the bound while the
/// route is busy: 32 connections that ask for large answers and never read them would otherwise
/// hold every slot (a slot lives until the answer is written) and refuse everyone else.
public final class InFlightCount: @unchecked Sendable {  // Atomics only; the table is never reallocated.
    private let count = Atomic<Int>(0)
    /// Calls in flight per client, in a direct-mapped table: two clients sharing a slot share a
    /// share, which costs an innocent client a refusal only while the other holds its share.
    private let perClient: UnsafeMutablePointer<Atomic<Int32>>
    static let clientSlots = 256

    public init() {
        perClient = .allocate(capacity: Self.clientSlots)
        for slot in 0..<Self.clientSlots { (perClient + slot).initialize(to: Atomic<Int32>(0)) }
    }

    deinit {
        perClient.deinitialize(count: Self.clientSlots)
        perClient.deallocate()
    }

    /// The calls one client may hold while the route is busy (at least a quarter of `limit` in
    /// flight): an eighth of the bound, at least one.
    public static func share(of limit: Int) -> Int { max(1, limit / 8) }

    /// Counts one more call of `client` (any hash of its address or session) unless `limit` are in
    /// flight already, or the route is busy and `client` holds its share.
    /// - Returns: whether the call was admitted (then `leave(client:)` once it is over).
    public func enter(limit: Int, client: UInt64) -> Bool {
        let now = count.add(1, ordering: .relaxed).newValue
        guard now <= limit else {
            count.subtract(1, ordering: .relaxed)
            return false
        }
        let slot = perClient + Self.slot(client)
        let held = Int(slot.pointee.add(1, ordering: .relaxed).newValue)
        if held > Self.share(of: limit) && now > limit / 4 {
            slot.pointee.subtract(1, ordering: .relaxed)
            count.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    public func leave(client: UInt64) {
        (perClient + Self.slot(client)).pointee.subtract(1, ordering: .relaxed)
        count.subtract(1, ordering: .relaxed)
    }

    /// Counts one more call with no client of its own (provider calls): the bound alone.
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

    private static func slot(_ client: UInt64) -> Int {
        Int(truncatingIfNeeded: (client &* 0x9E37_79B9_7F4A_7C15) >> 56)
    }
}

/// Who a call counts against in a route's in-flight share: FNV-1a of the client's address (the
/// address a trusted proxy names, else the peer's), or a session's own hash.
public enum AdmissionClient {
    public static func address(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return hash
    }
}
