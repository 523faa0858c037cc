import HTTP1

/// What the proxy says about itself to upstreams, decided once from the configuration: the
/// browser-facing host and scheme (from `GATEHOUSE_PUBLIC_URL`, never from the request) and whose
/// forwarding headers are believed (`GATEHOUSE_TRUSTED_PROXIES`).
///
/// For example: `ProxyForwarding(publicURL: config.publicURL, trustedProxies: config.trustedProxies, csrfHeader: "X-CSRF")`
/// gives `forwardedHost == "app.example.com"` for `https://app.example.com`.
public struct ProxyForwarding: Sendable, Equatable {
    /// `X-Forwarded-Host`: host[:port] of `GATEHOUSE_PUBLIC_URL` as written in its origin (default
    /// port omitted). A browser's `Host` is whatever it chose to send (a DNS-rebinding page, a
    /// hand-made request), so upstreams building links or redirects from it would be misled.
    public let forwardedHost: String
    /// `X-Forwarded-Proto`: the scheme of `GATEHOUSE_PUBLIC_URL`.
    public let forwardedProto: String
    /// Peers whose forwarding headers (`X-Forwarded-For`, `X-Real-IP`, `Forwarded`, …) are kept.
    public let trustedProxies: [CIDR]
    /// The anti-forgery header, never forwarded.
    public let csrfHeader: String
    /// The identity assertion's header (`GATEHOUSE_ASSERTION_HEADER`): a browser's copy is forged,
    /// so it is never forwarded, on any route.
    public let assertionHeader: String
    /// `GATEHOUSE_FORWARD_UNDERSCORE_HEADERS`: whether names with `_` may pass at all.
    public let forwardsUnderscoreHeaders: Bool
    /// `X-Forwarded-Proto` and `X-Forwarded-Host` as added to every forwarded request, checked once
    /// (nil when they could not be written: then the head writer drops them, as it would anyway).
    let forwardedProtoField: HTTPField.Checked?
    let forwardedHostField: HTTPField.Checked?
    /// The two, as added to each forwarded request (one array, retained rather than made each time).
    let addedFields: [HTTPField.Checked]
    /// The request fields never forwarded from a trusted proxy, and from anyone else
    /// (`ProxyHeaderPolicy.upstreamAlwaysDropped`, `.upstreamDropped`): here, not read from the
    /// statics, so that a loop's copy of the forwarding has its own (`loopCopy`).
    let droppedFromTrusted: HeaderNameSet
    let droppedFromOthers: HeaderNameSet

    public init(publicURL: PublicURL, trustedProxies: [CIDR], csrfHeader: String,
                assertionHeader: String = "Gatehouse-Assertion", forwardsUnderscoreHeaders: Bool = false) {
        self.init(forwardedHost: String(publicURL.origin.utf8.dropFirst(publicURL.scheme.utf8.count + 3))!,
                  forwardedProto: publicURL.scheme, trustedProxies: trustedProxies, csrfHeader: csrfHeader,
                  assertionHeader: assertionHeader, forwardsUnderscoreHeaders: forwardsUnderscoreHeaders)
    }

    public init(forwardedHost: String, forwardedProto: String, trustedProxies: [CIDR], csrfHeader: String,
                assertionHeader: String = "Gatehouse-Assertion", forwardsUnderscoreHeaders: Bool = false) {
        self.forwardsUnderscoreHeaders = forwardsUnderscoreHeaders
        self.forwardedHost = forwardedHost
        self.forwardedProto = forwardedProto
        self.trustedProxies = trustedProxies
        self.csrfHeader = csrfHeader
        self.assertionHeader = assertionHeader
        forwardedProtoField = HTTPField.Checked(name: "X-Forwarded-Proto", value: forwardedProto)
        forwardedHostField = HTTPField.Checked(name: "X-Forwarded-Host", value: forwardedHost)
        addedFields = [forwardedProtoField, forwardedHostField].compactMap { $0 }
        droppedFromTrusted = ProxyHeaderPolicy.upstreamAlwaysDropped.adding(assertionHeader)
        droppedFromOthers = ProxyHeaderPolicy.upstreamDropped.adding(assertionHeader)
    }

    /// Equal when configured alike (everything else is derived from these six).
    public static func == (a: ProxyForwarding, b: ProxyForwarding) -> Bool {
        a.forwardedHost == b.forwardedHost && a.forwardedProto == b.forwardedProto
            && a.trustedProxies == b.trustedProxies && a.csrfHeader == b.csrfHeader
            && a.assertionHeader == b.assertionHeader && a.forwardsUnderscoreHeaders == b.forwardsUnderscoreHeaders
    }

    /// True when `peerIP` is one of the trusted proxies.
    public func trusts(peerIP: String) -> Bool {
        trustedProxies.contains { $0.contains(ip: peerIP) }
    }
}
