import FoundationEssentials

/// A client registered at the development provider.
///
/// A client with a `secret` is confidential and must authenticate at the token and revocation
/// endpoints (`client_secret_basic` or `client_secret_post`); one without is public (`none`).
///
/// For example:
/// ```swift
/// DevClient(id: "gatehouse", secret: "s3cret", redirectURIs: ["http://127.0.0.1:8080/callback"])
/// ```
public struct DevClient: Sendable, Equatable {
    public var id: String
    public var secret: String?
    /// Compared exactly, as RFC 9700 §4.1.3 asks: no prefix or wildcard matching.
    public var redirectURIs: [String]
    public var postLogoutRedirectURIs: [String]
    /// Where `DevProvider.backchannelLogout(sub:sid:)` POSTs a logout token for this client.
    public var backchannelLogoutURI: String?

    public init(id: String, secret: String? = nil, redirectURIs: [String],
                postLogoutRedirectURIs: [String] = [], backchannelLogoutURI: String? = nil) {
        self.id = id
        self.secret = secret
        self.redirectURIs = redirectURIs
        self.postLogoutRedirectURIs = postLogoutRedirectURIs
        self.backchannelLogoutURI = backchannelLogoutURI
    }

    var isConfidential: Bool { secret != nil }
}

/// Configuration of the development provider. Lifetimes are in seconds.
///
/// For example:
/// ```swift
/// DevProviderConfiguration(issuer: "http://127.0.0.1:9400", clients: [client])
/// ```
public struct DevProviderConfiguration: Sendable, Equatable {
    /// The issuer identifier, e.g. `http://127.0.0.1:9400`. Every endpoint lives under its path.
    public var issuer: String
    public var clients: [DevClient]
    public var accessTokenLifetime: Int
    public var idTokenLifetime: Int
    /// When true, every refresh grant returns a new refresh token and invalidates the one presented
    /// (RFC 9700 §4.14.2); presenting a rotated token again revokes the whole token family.
    public var rotateRefreshTokens: Bool

    public init(issuer: String, clients: [DevClient], accessTokenLifetime: Int = 300,
                idTokenLifetime: Int = 300, rotateRefreshTokens: Bool = true) {
        self.issuer = issuer
        self.clients = clients
        self.accessTokenLifetime = accessTokenLifetime
        self.idTokenLifetime = idTokenLifetime
        self.rotateRefreshTokens = rotateRefreshTokens
    }

    /// Checks what the provider relies on: an `http(s)` issuer on a loopback host without query or
    /// fragment, unique client ids, absolute redirect URIs without fragments (RFC 6749 §3.1.2),
    /// lifetimes of 1 s to 10 years. `gatehouse demo` calls this before starting the provider.
    ///
    /// - Throws: `DevProviderError.invalidConfiguration` listing every problem found.
    public func validate() throws(DevProviderError) {
        var problems: [String] = []
        if let url = URLComponents(string: issuer), let scheme = url.scheme?.lowercased(),
           scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty {
            if !DevProviderSecurity.isLoopback(host: host) {
                problems.append("issuer host \(host) is not a loopback address; the development provider is for local use only")
            }
            if url.query != nil || url.fragment != nil {
                problems.append("issuer must not have a query or fragment (OpenID Connect Discovery §3)")
            }
            if url.path.hasSuffix("/") {
                problems.append("issuer must not end with '/'")
            }
        } else {
            problems.append("issuer \(issuer) is not an absolute http(s) URL")
        }
        var seen: Set<String> = []
        for client in clients {
            if client.id.isEmpty { problems.append("a client has an empty id") }
            if !seen.insert(client.id).inserted { problems.append("client id \(client.id) is registered twice") }
            if client.redirectURIs.isEmpty { problems.append("client \(client.id) has no redirect URI") }
            if client.secret?.isEmpty == true { problems.append("client \(client.id) has an empty secret") }
            let uris = client.redirectURIs + client.postLogoutRedirectURIs + [client.backchannelLogoutURI].compactMap { $0 }
            for uri in uris where !Self.isAbsoluteURIWithoutFragment(uri) {
                problems.append("client \(client.id): \(uri) is not an absolute URI without fragment")
            }
        }
        for (name, value) in [("accessTokenLifetime", accessTokenLifetime), ("idTokenLifetime", idTokenLifetime)]
        where !(1...Self.maximumLifetime).contains(value) {
            problems.append("\(name) must be between 1 and \(Self.maximumLifetime) seconds")
        }
        if !problems.isEmpty { throw .invalidConfiguration(problems) }
    }

    /// Ten years: longer lifetimes are clamped to this.
    public static let maximumLifetime = 315_360_000

    private static func isAbsoluteURIWithoutFragment(_ uri: String) -> Bool {
        guard let url = URLComponents(string: uri), url.scheme != nil, url.host != nil else { return false }
        return url.fragment == nil
    }
}
