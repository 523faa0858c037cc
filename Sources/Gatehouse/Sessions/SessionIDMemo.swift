import GatehouseSessions

/// The session cache's memo of recent cookie values: which session id each well-formed value is
/// (validating and hashing a value costs far more than the rest of a proxied request's session
/// work, and a browser sends the same value every time).
///
/// Direct-mapped: each value has one slot, chosen by its words mixed with a random seed, and a
/// value that lands on a taken slot replaces what was there. A look-up is one slot compared, no
/// hashing (a seeded `Dictionary` look-up of the six words cost ~900 instructions per proxied
/// request). Values are chosen by clients, but there are no chains to pile up in: the worst a
/// client can do is push others' values out, each of which then costs one validation again —
/// what emptying a full dictionary memo did to all of them at once.
struct SessionIDMemo {
    private struct Slot {
        let key: SessionCookieKey
        let id: SessionID
        /// The proxy's copy of the session behind this value, once a request on this loop resolved it.
        var bearer: LoopBearer?
    }

    static let slotCount = 4096
    private var slots: [Slot?]
    private let seed: UInt64

    init(seed: UInt64 = UInt64.random(in: 1 ... .max)) {
        slots = Array(repeating: nil, count: Self.slotCount)
        self.seed = seed | 1
    }

    func id(for key: SessionCookieKey) -> SessionID? {
        guard let slot = slots[key.slotIndex(seed: seed, count: Self.slotCount)], slot.key == key else { return nil }
        return slot.id
    }

    mutating func remember(_ id: SessionID, for key: SessionCookieKey) {
        slots[key.slotIndex(seed: seed, count: Self.slotCount)] = Slot(key: key, id: id)
    }

    /// The remembered bearer of `key` when `isUsable` accepts it; read in place (no copy of the slot,
    /// whose strings would be retained and released for nothing).
    func bearer(for key: SessionCookieKey, _ isUsable: (borrowing LoopBearer) -> Bool) -> String? {
        slots.withUnsafeBufferPointer { slots in
            guard let slot = slots[key.slotIndex(seed: seed, count: Self.slotCount)], slot.key == key,
                  let bearer = slot.bearer, isUsable(bearer) else { return nil }
            return bearer.authorization
        }
    }

    /// Keeps `bearer` with the value's id; nothing when the value is no longer remembered (its slot
    /// was taken by another value meanwhile).
    mutating func remember(_ bearer: LoopBearer, for key: SessionCookieKey) {
        let index = key.slotIndex(seed: seed, count: Self.slotCount)
        guard slots[index]?.key == key else { return }
        slots[index]?.bearer = bearer
    }
}

/// What the proxy reads of a cached session, copied for one event loop (`SessionCache.cachedBearer`):
/// the loops then share no reference count, lock or string on a proxied request's way, where each
/// shared one moved a cache line between cores on every request.
struct LoopBearer {
    /// `SessionCache`'s generation when copied: any session changed or ended in this process since
    /// then makes every copy stale at once.
    let generation: UInt64
    /// The shared entry's load time: a copy lives no longer than the entry it came from.
    let loadedAt: UInt64
    /// The idle expiry as slid by the request that made the copy (a later second slides it again,
    /// through the shared entry).
    let idleExpiresAt: Int64
    /// The session's absolute expiry.
    let expiresAt: Int64
    /// The first second at which the access token has ended or is due for a refresh.
    let usableBefore: Int64
    /// `Bearer <access token>`, in storage of this loop's own.
    let authorization: String
    /// The ids of the configured `allow=` rules the session satisfies (`AccessRule.id`), decided
    /// when the copy was made: a route's rule then costs the loop no lock and no shared object.
    let allowedRules: [Int]
}
