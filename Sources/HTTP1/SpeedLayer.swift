import Synchronization

/// The gateway's speed layer as one switch: the per-connection memos (`RequestFieldMemo`,
/// `BrowserHeadMemo`) and the session door's per-loop copies (`SessionIDMemo`, `LoopBearer`).
/// On in production. Off, every decision they cache is made afresh from its inputs, which is what
/// `MemoDifferentialTests` compares them with: the same request sequences must give the same
/// upstream requests and browser answers either way.
public final class SpeedLayer: Sendable {
    private let on = Atomic<Bool>(true)

    public init() {}

    public var isOn: Bool { on.load(ordering: .relaxed) }

    public func set(_ value: Bool) { on.store(value, ordering: .relaxed) }
}
