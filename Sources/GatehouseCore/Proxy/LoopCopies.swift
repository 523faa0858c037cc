/// Copies of the gateway's configured values for one event loop (`HTTPHandler.loopHandler(for:)`).
///
/// A copy of a Swift `String` or array shares its storage, and so its reference count: every
/// request that copies a route, a header name or a forwarded field from a value the loops share
/// moves that count's cache line between the loops' cores (the proxy's largest remaining cost
/// beside the system calls, measured for ce3f3a0: `bench/RESULTS.md`). These copies are equal
/// to the originals in every way but their storage, which only their loop touches.

extension String {
    /// The same text in storage of its own (small strings have none and are returned as they are).
    public var ownedCopy: String { String(decoding: Array(utf8), as: UTF8.self) }
}

extension AbsoluteURL {
    /// This URL with every string in storage of its own.
    public var loopCopy: AbsoluteURL {
        var copy = self
        copy.scheme = scheme.ownedCopy
        copy.host = host.ownedCopy
        copy.path = path.ownedCopy
        copy.query = query?.ownedCopy
        copy.fragment = fragment?.ownedCopy
        return copy
    }
}

extension UpstreamRoute {
    /// This route with storage of its own (its fields and their strings).
    public var loopCopy: UpstreamRoute {
        var copy = self
        // Each setter gives `copy` a storage object of its own first (copy on write).
        copy.prefix = prefix.ownedCopy
        copy.upstream = upstream.loopCopy
        copy.replacementPath = replacementPath?.ownedCopy
        return copy
    }
}

extension RouteTable {
    /// The same routes, in the same order, with storage of their own.
    public var loopCopy: RouteTable { RouteTable(routes.map(\.loopCopy)) }
}

extension ProxyForwarding {
    /// The same forwarding, with storage of its own (the added fields included).
    public var loopCopy: ProxyForwarding {
        ProxyForwarding(forwardedHost: forwardedHost.ownedCopy, forwardedProto: forwardedProto.ownedCopy,
                        trustedProxies: trustedProxies.map(\.loopCopy), csrfHeader: csrfHeader.ownedCopy,
                        assertionHeader: assertionHeader.ownedCopy, forwardsUnderscoreHeaders: forwardsUnderscoreHeaders)
    }
}

extension CIDR {
    /// The same network, its address bytes in an array of its own.
    var loopCopy: CIDR { CIDR(ownAddress: address.map { $0 }, prefixLength: prefixLength) }

    private init(ownAddress: [UInt8], prefixLength: Int) {
        address = ownAddress
        self.prefixLength = prefixLength
    }
}
