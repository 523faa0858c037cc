import GatehouseEncoding
import Logging

/// Everything the gateway is configured with, typed and validated. Built from the environment by
/// ``load(environment:requireSecretKey:)``; only the executable reads the real environment.
///
/// For example:
/// `let config = try GatehouseConfiguration.load(environment: env, requireSecretKey: true).get()`
///
/// Durations are whole seconds. `description` never shows the client secret or the keys.
public struct GatehouseConfiguration: Sendable, CustomStringConvertible {
    // MARK: Provider
    /// The OpenID provider issuer exactly as configured (it must equal the `iss` of its tokens).
    public var issuer: String
    public var clientID: String
    public var clientSecret: String?
    public var clientAuthMethod: ClientAuthMethod
    /// Requested scopes: configured order kept, duplicates dropped, `openid` added first when missing.
    public var scopes: [String]
    /// Extra authorization-request parameters, decoded, in configured order.
    public var authParams: [(String, String)]
    /// Time limit for each provider call (discovery, JWKS, token, revocation), seconds.
    public var providerTimeout: Int
    /// Refresh the access token when it expires within this many seconds (`GATEHOUSE_REFRESH_MARGIN`).
    public var refreshMargin: Int
    /// When UserInfo is fetched after login and refresh (`GATEHOUSE_USERINFO`).
    public var userinfo: UserInfoPolicy = .auto
    /// `GATEHOUSE_ID_TOKEN_ALGS`: the only algorithms accepted for ID and logout tokens; nil for
    /// the default (RS256, plus the provider's algorithm when it advertises exactly one).
    public var idTokenAlgorithms: [String]? = nil
    /// The PEM of the client's private key for `private_key_jwt` (`GATEHOUSE_CLIENT_PRIVATE_KEY`,
    /// the PEM itself or a file holding it); never printed.
    public var clientPrivateKeyPEM: String? = nil
    /// `GATEHOUSE_CLIENT_KEY_ID`: the `kid` of that key at the provider.
    public var clientKeyID: String? = nil
    /// `GATEHOUSE_PROVIDER`: the preset the provider variables below default from.
    public var provider: ProviderProfile = .named(.generic)
    /// Endpoint overrides by variable (`GATEHOUSE_TOKEN_ENDPOINT` → URL), winning over discovery;
    /// includes the profile's default token endpoint.
    public var endpointOverrides: [String: String] = [:]
    /// `GATEHOUSE_TOKEN_REQUEST`.
    public var tokenRequest: TokenRequestMethod = .post
    /// `GATEHOUSE_LOGIN_PARAMS`: `/login` query parameters passed on to the authorization request.
    public var loginParams: [String] = []
    /// `GATEHOUSE_REQUIRE_CLAIMS`: `(name, value)` pairs the ID token must carry.
    public var requiredClaims: [(String, String)] = []
    /// `GATEHOUSE_LOGOUT_URL` (or the profile's): the logout template used when the provider has no
    /// `end_session_endpoint`.
    public var logoutURL: String? = nil

    // MARK: Browser-facing
    public var publicURL: PublicURL
    public var listen: ListenAddress
    /// `GATEHOUSE_METRICS_LISTEN`: where `/metrics` is served instead of the public port; nil to
    /// serve it on the public port.
    public var metricsListen: ListenAddress? = nil
    public var publicDir: String
    public var cookieName: String
    public var cookieSameSite: SameSitePolicy
    public var csrfHeader: String
    public var postLogoutRedirectURI: String
    /// The `Strict-Transport-Security` value sent on every answer (`GATEHOUSE_HSTS`); nil on http
    /// or when turned `off`.
    public var strictTransportSecurity: String?

    // MARK: Sessions
    public var databasePath: String
    /// 32-byte key sealing tokens at rest; nil only when it was not required and not given.
    public var secretKey: [UInt8]?
    /// The previous key, still used to open sessions sealed before a rotation.
    public var previousSecretKey: [UInt8]?
    /// Sliding idle timeout, seconds.
    public var sessionIdle: Int
    /// Absolute session lifetime, seconds.
    public var sessionLifetime: Int
    /// `GATEHOUSE_SESSION_PERSISTENT`: whether the session cookie outlives the browser session.
    public var sessionCookiePersistence: SessionCookiePersistence = .browserSession

    // MARK: Proxy
    public var routes: [UpstreamRoute]
    /// Largest request body accepted on API routes, bytes.
    public var maxBody: Int
    public var trustedProxies: [CIDR]
    /// Time limit for an upstream's first response byte, seconds.
    public var upstreamTimeout: Int
    /// In-flight API calls per route and event loop before more are refused with `503`
    /// (`GATEHOUSE_ROUTE_MAX_IN_FLIGHT`, a route's `max_in_flight=` option wins).
    public var routeMaxInFlight: Int = 512
    /// Provider calls in flight at once before more fail at once (`GATEHOUSE_PROVIDER_MAX_IN_FLIGHT`).
    public var providerMaxInFlight: Int = 64
    /// Session-store calls waiting for a store thread before more fail at once (`GATEHOUSE_STORE_QUEUE`).
    public var storeQueue: Int = 4_096
    /// How long a request waits for the session store, seconds (`GATEHOUSE_STORE_TIMEOUT`).
    public var storeTimeout: Int = 10
    /// A proxied WebSocket with no byte in either direction for this long is closed, seconds
    /// (`GATEHOUSE_WEBSOCKET_IDLE`).
    public var websocketIdle: Int = 600
    /// `auto`: each event loop kept on a CPU of its own (`GATEHOUSE_CPU_AFFINITY`).
    public var cpuAffinity: CPUAffinityPolicy = .auto

    // MARK: Logging
    public var logLevel: Logger.Level
    public var logFormat: LogFormat

    /// The OAuth `redirect_uri`: `{PUBLIC_URL}/callback`.
    public var redirectURI: String { publicURL.redirectURI }

    /// Cookies carry `Secure` (and may use `__Host-`) when the public URL is https.
    public var cookieSecure: Bool { publicURL.isSecure }

    /// The routes ready for matching (longest prefix first).
    public var routeTable: RouteTable { RouteTable(routes) }

    /// `{issuer}/.well-known/openid-configuration`, a terminating `/` of the issuer removed first
    /// (OpenID Connect Discovery 1.0 §4).
    public var discoveryURL: String {
        var base = issuer
        while base.hasSuffix("/") { base.removeLast() }
        return base + "/.well-known/openid-configuration"
    }

    public var description: String {
        let routeList = routes.map(\.description).joined(separator: ",")
        return """
            issuer=\(issuer) clientID=\(clientID) clientSecret=\(clientSecret == nil ? "unset" : "set") \
            clientAuthMethod=\(clientAuthMethod.rawValue) publicURL=\(publicURL.origin) listen=\(listen) \
            scopes=\(scopes.joined(separator: " ")) routes=\(routeList) database=\(URIPassword.redacting(databasePath)) \
            secretKey=\(secretKey == nil ? "unset" : "set") previousSecretKey=\(previousSecretKey == nil ? "unset" : "set") \
            publicDir=\(publicDir) sessionIdle=\(sessionIdle)s sessionLifetime=\(sessionLifetime)s \
            cookieName=\(cookieName) cookieSameSite=\(cookieSameSite.rawValue) csrfHeader=\(csrfHeader) \
            logLevel=\(logLevel.rawValue) logFormat=\(logFormat.rawValue) maxBody=\(maxBody) \
            providerTimeout=\(providerTimeout)s upstreamTimeout=\(upstreamTimeout)s refreshMargin=\(refreshMargin)s \
            trustedProxies=\(trustedProxies.map(\.description).joined(separator: ","))
            """
    }
}

/// `GATEHOUSE_SESSION_PERSISTENT` ("remember me"): `false` (the default) gives a browser-session
/// cookie, gone when the browser closes; `true` gives it `Max-Age` = the session's remaining
/// absolute lifetime, so it lasts as long as the session can.
public enum SessionCookiePersistence: String, Sendable {
    case browserSession = "false"
    case untilSessionEnds = "true"
}
