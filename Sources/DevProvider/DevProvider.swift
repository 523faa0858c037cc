import FoundationEssentials
import EventLoops
import HTTP1
import HTTPServer
import Logging
import Synchronization

/// A small OpenID provider for `gatehouse demo` and in-process tests. **Not for production**: anyone
/// can sign in as anyone by typing a user name. Bind it to loopback only (`DevProviderSecurity`).
///
/// It implements the authorization code flow with PKCE S256 (RFC 6749, RFC 7636), RFC 9207 `iss`
/// in authorization responses, ES256 ID tokens, refresh token rotation, revocation (RFC 7009),
/// userinfo, RP-initiated logout and back-channel logout tokens. All state is in memory.
///
/// For example:
/// ```swift
/// let provider = DevProvider(configuration: configuration, logger: logger)
/// // serve `provider` as the HTTPHandler of a server bound to 127.0.0.1:9400
/// ```
///
/// ## Topics
/// - `handle(_:writer:)`: the HTTP endpoints under the issuer's path.
/// - `statistics`, `setRefreshBehaviour(_:)`: test controls.
/// - `backchannelLogout(sub:sid:)`: ends sessions and notifies clients.
public final class DevProvider: TaskHTTPHandler, Sendable {
    let configuration: DevProviderConfiguration
    let clients: [String: DevClient]
    let policy: TokenPolicy
    let signingKey: SigningKey
    let state = Mutex(ProviderState())
    let logger: Logger
    let transport: any BackchannelLogoutTransport
    private let clock: @Sendable () -> Date
    private let routes: [String: Endpoint]
    private let discoveryResponse: HTTPResponse
    private let jwksResponse: HTTPResponse

    enum Endpoint: Sendable {
        case discovery, jwks, authorize, token, revoke, userinfo, logout
    }

    /// - Parameters:
    ///   - configuration: issuer, clients, lifetimes. Call `configuration.validate()` first when the
    ///     configuration comes from a user.
    ///   - logger: receives one line per grant, refusal and logout; never a token or code.
    ///   - now: the clock, for tests that move time.
    ///   - transport: delivers back-channel logout tokens (`FetchClient` by default).
    public init(configuration: DevProviderConfiguration, logger: Logger,
                now: @escaping @Sendable () -> Date = { Date() },
                transport: any BackchannelLogoutTransport = HTTPBackchannelLogoutTransport()) {
        self.configuration = configuration
        self.clients = Dictionary(configuration.clients.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        // Clamped so that `now + lifetime` can never overflow, whatever the configuration says.
        let lifetimes = 1...DevProviderConfiguration.maximumLifetime
        self.policy = TokenPolicy(issuer: configuration.issuer,
                                  accessTokenLifetime: configuration.accessTokenLifetime.clamped(to: lifetimes),
                                  idTokenLifetime: configuration.idTokenLifetime.clamped(to: lifetimes),
                                  rotateRefreshTokens: configuration.rotateRefreshTokens)
        var logger = logger
        logger[metadataKey: "oauth.issuer"] = "\(configuration.issuer)"
        self.logger = logger
        self.transport = transport
        self.clock = now
        let base = Self.issuerPath(configuration.issuer)
        routes = [
            base + "/.well-known/openid-configuration": .discovery, base + "/jwks": .jwks,
            base + "/authorize": .authorize, base + "/token": .token, base + "/revoke": .revoke,
            base + "/userinfo": .userinfo, base + "/logout": .logout,
        ]
        discoveryResponse = ProviderResponse.json(DiscoveryDocument(issuer: configuration.issuer))
        let key = SigningKey()
        signingKey = key
        jwksResponse = ProviderResponse.json(key.jwks)
    }

    /// Counts of what clients asked for so far.
    public var statistics: DevProviderStatistics {
        state.withLock { $0.statistics }
    }

    /// Makes later refresh grants fail with `invalid_grant`, wait, or work normally.
    public func setRefreshBehaviour(_ behaviour: RefreshBehaviour) {
        state.withLock { $0.refreshBehaviour = behaviour }
    }

    /// Discovery and JWKS need no I/O: they are answered on the event loop.
    public func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse? {
        guard head.method == "GET" else { return nil }
        switch routes[String(head.path)] {
        case .discovery: return discoveryResponse
        case .jwks: return jwksResponse
        default: return nil
        }
    }

    public func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async {
        await writer.respond(await response(to: request))
    }

    func response(to request: HTTPRequest) async -> HTTPResponse {
        guard let endpoint = routes[String(request.head.path)] else {
            return ProviderResponse.plain(status: 404, "Not Found")
        }
        let method = request.head.method
        switch endpoint {
        case .discovery, .jwks:
            guard method == "GET" || method == "HEAD" else { return ProviderResponse.methodNotAllowed(allow: "GET, HEAD") }
            var response = endpoint == .discovery ? discoveryResponse : jwksResponse
            if method == "HEAD" { response.body = [] }
            return response
        case .authorize:
            switch method {
            case "GET": return authorizationPage(query: request.head.query)
            case "POST": return await authorizationDecision(request)
            default: return ProviderResponse.methodNotAllowed(allow: "GET, POST")
            }
        case .token:
            guard method == "POST" else { return ProviderResponse.methodNotAllowed(allow: "POST") }
            return await tokenEndpoint(request)
        case .revoke:
            guard method == "POST" else { return ProviderResponse.methodNotAllowed(allow: "POST") }
            return await revocationEndpoint(request)
        case .userinfo:
            guard method == "GET" || method == "POST" else { return ProviderResponse.methodNotAllowed(allow: "GET, POST") }
            return userInfoEndpoint(request)
        case .logout:
            guard method == "GET" || method == "POST" else { return ProviderResponse.methodNotAllowed(allow: "GET, POST") }
            return await logoutEndpoint(request)
        }
    }

    /// Seconds since the epoch, as JWT claims count them.
    var now: Int {
        let seconds = clock().timeIntervalSince1970
        // Beyond year 10000 (or NaN) the clock is broken; do not trap converting it.
        guard seconds.isFinite, abs(seconds) < 253_402_300_800 else { return 0 }
        return Int(seconds.rounded(.down))
    }

    /// Reads an `application/x-www-form-urlencoded` body of at most 64 KiB.
    func readForm(_ request: HTTPRequest) async throws(OAuthError) -> FormParameters {
        let contentType = request.head.headers["Content-Type"] ?? ""
        let mediaType = contentType.split(separator: ";").first.map { $0.trimmingASCIIWhitespace() } ?? ""
        guard mediaType.asciiCaseInsensitiveEquals("application/x-www-form-urlencoded") else {
            throw OAuthError(.invalidRequest, "the body must be application/x-www-form-urlencoded")
        }
        let bytes: [UInt8]
        do {
            bytes = try await request.body.collect(limit: 64 * 1024)
        } catch {
            throw OAuthError(.invalidRequest, "the body could not be read or is larger than 64 KiB")
        }
        do {
            return try FormParameters(bytes: bytes)
        } catch {
            throw OAuthError(.invalidRequest, "the body is not valid form encoding")
        }
    }

    /// The issuer's path without a trailing `/` (empty for `http://127.0.0.1:9400`).
    static func issuerPath(_ issuer: String) -> String {
        var path = URLComponents(string: issuer)?.percentEncodedPath ?? ""
        while path.hasSuffix("/") { path.removeLast() }
        return path
    }
}

extension Comparable {
    func clamped(to range: ClosedRange<Self>) -> Self {
        min(max(self, range.lowerBound), range.upperBound)
    }
}
