import Synchronization

/// The speed layer as one switch: every memo that answers a request from what an earlier one
/// decided. In this module and the transports: the parsers' repeated field lines
/// (`RepeatedFieldLines`, and the request parser's validated `Host`), the upstream connection's
/// last framing decision (`UpstreamConnection.decideRemembering`). In the gateway: the
/// per-connection memos (`RequestFieldMemo`, `BrowserHeadMemo`), the session door's per-loop copies
/// (`SessionIDMemo`, `LoopBearer`) and the identity assertions' per-loop memo.
///
/// On in production. Off, every decision they cache is made afresh from its inputs, which is what
/// `MemoDifferentialTests` compares them with: the same request sequences must give the same
/// upstream requests and browser answers either way. One instance is shared by a gateway's
/// server, upstream clients and context (`GatewayRuntime`).
public final class SpeedLayer: Sendable {
    private let on = Atomic<Bool>(true)

    public init() {}

    public var isOn: Bool { on.load(ordering: .relaxed) }

    public func set(_ value: Bool) { on.store(value, ordering: .relaxed) }
}
