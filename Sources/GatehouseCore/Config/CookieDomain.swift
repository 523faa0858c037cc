/// `GATEHOUSE_COOKIE_DOMAIN`: the `Domain=` the session cookie is set with, so that apps on other
/// subdomains of it receive the cookie too (RFC 6265bis §5.6.3). Every host under the domain then
/// gets the session cookie, and any of them can plant one: the threat model says what that gives.
public enum CookieDomain {
    /// The domain as the cookie names it (lower-case, no leading dot), or why it cannot be.
    ///
    /// The public URL's host must domain-match it (the browser ignores a `Domain=` the setting host
    /// is not under); an IP address cannot have subdomains; a single label (`com`, `localhost`) is
    /// a public suffix or a host, never a shared parent.
    public static func parse(_ text: String, publicHost: String?) -> Result<String, Problem> {
        var domain = text.lowercased()
        if domain.hasPrefix(".") { domain.removeFirst() }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard domain.utf8.count <= 253, labels.allSatisfy(isLabel) else { return .failure(.notADomain) }
        if IPAddress.parse(domain) != nil || domain.hasPrefix("[") { return .failure(.ipAddress) }
        guard labels.count >= 2 else { return .failure(.singleLabel) }
        if let publicHost {
            let host = publicHost.lowercased()
            guard host == domain || host.hasSuffix("." + domain) else { return .failure(.notAParentOf(host)) }
        }
        return .success(domain)
    }

    private static func isLabel(_ label: Substring) -> Bool {
        guard !label.isEmpty, label.utf8.count <= 63, label.first != "-", label.last != "-" else { return false }
        return label.utf8.allSatisfy { b in
            (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "-")
        }
    }

    public enum Problem: Error, Equatable, CustomStringConvertible {
        case notADomain, ipAddress, singleLabel
        case notAParentOf(String)

        public var description: String {
            switch self {
            case .notADomain: "is not a domain name (letters, digits, - and dots)"
            case .ipAddress: "is an IP address: a cookie for an address cannot be shared with other hosts"
            case .singleLabel: "has a single label: a top-level domain or a host, never a parent domain to share"
            case .notAParentOf(let host):
                "does not contain GATEHOUSE_PUBLIC_URL's host \(host): the browser would ignore the cookie"
            }
        }
    }
}
