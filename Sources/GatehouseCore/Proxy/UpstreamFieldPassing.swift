import HTTP1

/// Which of a browser request's fields go upstream and the `X-Forwarded-For` value sent with them:
/// the part of `ProxyHeaderPolicy.upstreamRequestFields` that depends on the request's fields, its
/// peer, whether a valid `traceparent` came with it, and the configuration, and on nothing that
/// changes per request (the bearer, the trace). So it can be kept for a connection that sends the
/// same fields again (`RequestFieldMemo`).
public struct UpstreamFieldPassing: Sendable {
    /// The fields the bits of `passed` refer to (all of the request's, or the kept ones past 64).
    public let received: HTTPHeaders
    /// A bit per field of `received` that passes; nil when all of `received` pass.
    public let passed: UInt64?
    public let forwardedFor: String
}

/// Every input of `ProxyHeaderPolicy.upstreamFieldPassing` besides the browser's fields, and so the
/// key of any memo of its result (`RequestFieldMemo`): a new input of the rule is a new property
/// here, compared by the synthesised `==` (a test lists the properties, so one added here is
/// noticed there too).
public struct UpstreamPassingInputs: Sendable, Equatable {
    /// The browser's address (`X-Forwarded-For`, whether its forwarding fields are trusted).
    public var peerIP: String
    /// A valid `traceparent` was received, so `tracestate` passes.
    public var passesTracestate: Bool
    /// The gateway's forwarding configuration (trusted proxies, the anti-forgery header's name).
    public var forwarding: ProxyForwarding

    public init(peerIP: String, passesTracestate: Bool, forwarding: ProxyForwarding) {
        (self.peerIP, self.passesTracestate, self.forwarding) = (peerIP, passesTracestate, forwarding)
    }
}
