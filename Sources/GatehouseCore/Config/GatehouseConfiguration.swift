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
    // MARK: Providers
    /// The provider this configuration speaks for: the only one, or (``speaking(for:)``) one of several.
    public var idp: ProviderSettings
    /// `GATEHOUSE_PROVIDERS`' providers in configured order; empty without it.
    public var namedProviderList: [ProviderSettings] = []
    /// Whether `GATEHOUSE_PROVIDERS` names the providers (paths `/callback/NAME`, the chooser page).
    public var hasNamedProviders: Bool { !namedProviderList.isEmpty }
    /// Every provider, in configured order: the one `default` provider without `GATEHOUSE_PROVIDERS`.
    public var providers: [ProviderSettings] { hasNamedProviders ? namedProviderList : [idp] }

    /// This configuration speaking for `provider` (its issuer, client, redirect URI…).
    public func speaking(for provider: ProviderSettings) -> GatehouseConfiguration {
        var view = self
        view.idp = provider
        return view
    }

    /// Time limit for each provider call (discovery, JWKS, token, revocation), seconds.
    public var providerTimeout: Int
    /// Refresh the access token when it expires within this many seconds (`GATEHOUSE_REFRESH_MARGIN`).
    public var refreshMargin: Int
    /// `GATEHOUSE_CSP`: the `Content-Security-Policy` of HTML answers; nil for the default.
    public var contentSecurityPolicy: String? = nil

    // The provider's settings, as one provider's code reads them (``idp``).
    public var issuer: String { get { idp.issuer } set { idp.issuer = newValue } }
    public var clientID: String { get { idp.clientID } set { idp.clientID = newValue } }
    public var clientSecret: String? { get { idp.clientSecret } set { idp.clientSecret = newValue } }
    public var clientAuthMethod: ClientAuthMethod { get { idp.clientAuthMethod } set { idp.clientAuthMethod = newValue } }
    public var scopes: [String] { get { idp.scopes } set { idp.scopes = newValue } }
    public var authParams: [(String, String)] { get { idp.authParams } set { idp.authParams = newValue } }
    public var userinfo: UserInfoPolicy { get { idp.userinfo } set { idp.userinfo = newValue } }
    public var idTokenAlgorithms: [String]? { get { idp.idTokenAlgorithms } set { idp.idTokenAlgorithms = newValue } }
    public var clientPrivateKeyPEM: String? { get { idp.clientPrivateKeyPEM } set { idp.clientPrivateKeyPEM = newValue } }
    public var clientKeyID: String? { get { idp.clientKeyID } set { idp.clientKeyID = newValue } }
    /// The provider's profile (`GATEHOUSE_PROVIDER`).
    public var provider: ProviderProfile { get { idp.profile } set { idp.profile = newValue } }
    public var endpointOverrides: [String: String] { get { idp.endpointOverrides } set { idp.endpointOverrides = newValue } }
    public var tokenRequest: TokenRequestMethod { get { idp.tokenRequest } set { idp.tokenRequest = newValue } }
    public var loginParams: [String] { get { idp.loginParams } set { idp.loginParams = newValue } }
    public var requiredClaims: [(String, String)] { get { idp.requiredClaims } set { idp.requiredClaims = newValue } }
    public var logoutURL: String? { get { idp.logoutURL } set { idp.logoutURL = newValue } }

    // MARK: Browser-facing
    public var publicURL: PublicURL
    public var listen: ListenAddress
    /// `GATEHOUSE_METRICS_LISTEN`: where `/metrics` is served instead of the public port; nil to
    /// serve it on the public port.
    public var metricsListen: ListenAddress? = nil
    /// HTTPS on `listen`, the redirect listener and ACME (`GATEHOUSE_TLS_*`, `_HTTP_REDIRECT_LISTEN`, `_ACME_*`).
    public var listenerTLS = ListenerTLSSettings()
    public var publicDir: String
    public var cookieName: String
    public var cookieSameSite: SameSitePolicy
    /// `GATEHOUSE_COOKIE_DOMAIN`: the session cookie's `Domain`; nil for a host-only cookie.
    public var cookieDomain: String? = nil
    /// `GATEHOUSE_CORS_ORIGINS`: the other origins whose pages may call the gateway.
    public var cors = CORSPolicy.none
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
    /// `GATEHOUSE_CLIENT_ENCRYPTION_KEY` then `…_PREVIOUS` (PEM): the keys encrypted ID tokens and
    /// UserInfo are opened with, the first published for encryption.
    public var clientEncryptionKeyPEMs: [String] = []
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
    /// `GATEHOUSE_FORWARD_UNDERSCORE_HEADERS`: whether request headers with `_` in their name
    /// reach upstreams (the identity and forwarding names never do, in any spelling).
    public var underscoreHeaders: UnderscoreHeaderPolicy = .drop
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
    /// The request header carrying the signed identity assertion (`GATEHOUSE_ASSERTION_HEADER`).
    public var assertionHeader: String = "Gatehouse-Assertion"
    /// The assertion's lifetime, seconds (`GATEHOUSE_ASSERTION_TTL`).
    public var assertionTTL: Int = 60
    /// `GATEHOUSE_SECURITY_PROFILE`.
    public var securityProfile: SecurityProfile = .none

    // MARK: Logging
    public var logLevel: Logger.Level
    public var logFormat: LogFormat

    /// The OAuth `redirect_uri`: `{PUBLIC_URL}/callback`, or `{PUBLIC_URL}/callback/NAME` for
    /// each of `GATEHOUSE_PROVIDERS`.
    public var redirectURI: String {
        hasNamedProviders ? publicURL.redirectURI + "/" + idp.name : publicURL.redirectURI
    }

    /// Cookies carry `Secure` (and may use `__Host-`) when the public URL is https.
    public var cookieSecure: Bool { publicURL.isSecure }

    /// The routes ready for matching (longest prefix first).
    public var routeTable: RouteTable { RouteTable(routes) }

    /// Where the provider's discovery document is fetched (``ProviderSettings/discoveryURL``).
    public var discoveryURL: String { idp.discoveryURL }

    public var description: String {
        let routeList = routes.map(\.description).joined(separator: ",")
        let providerList = hasNamedProviders ? "providers=\(namedProviderList.map(\.name).joined(separator: ",")) " : ""
        return """
            \(providerList)issuer=\(issuer) clientID=\(clientID) clientSecret=\(clientSecret == nil ? "unset" : "set") \
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

/// `GATEHOUSE_FORWARD_UNDERSCORE_HEADERS`: `false` (the default, nginx's `underscores_in_headers
/// off`) drops every request header whose name has `_` before forwarding, since CGI, WSGI and Rack
/// servers read `X_Forwarded_User` as `X-Forwarded-User`.
public enum UnderscoreHeaderPolicy: String, Sendable {
    case drop = "false"
    case forward = "true"
}

/// `GATEHOUSE_SESSION_PERSISTENT` ("remember me"): `false` (the default) gives a browser-session
/// cookie, gone when the browser closes; `true` gives it `Max-Age` = the session's remaining
/// absolute lifetime, so it lasts as long as the session can.
public enum SessionCookiePersistence: String, Sendable {
    case browserSession = "false"
    case untilSessionEnds = "true"
}
