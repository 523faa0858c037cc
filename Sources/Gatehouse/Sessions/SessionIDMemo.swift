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
}
