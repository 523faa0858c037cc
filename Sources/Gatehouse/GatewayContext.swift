import FoundationEssentials
import GatehouseCore
import GatehouseEncoding
import GatehouseOIDC
import GatehouseSessions
import GatehouseStatic
import GatehouseTelemetry
import GatehouseTime
import HTTPClient
import EventLoops
import HTTP1
import HTTPServer
import Logging

/// The shared parts every endpoint uses; endpoints get what they need, nothing reaches back. A class
/// (immutable, shared) so handing it to an endpoint costs one retain, not one per member.
public final class GatewayContext: Sendable {
    public let configuration: GatehouseConfiguration
    /// The one door to the providers: every provider users sign in with (one, `default`, without
    /// `GATEHOUSE_PROVIDERS`); the first is the source of `auth=client` routes' tokens.
    public let providers: ProviderRegistry
    /// The one door to sessions, pending logins and the logout replay cache.
    public let sessions: SessionCache
    public let metrics: GatewayMetrics
    /// The one door to the upstreams (`http://` and `https://`).
    let upstreams: Upstreams
    public let staticFiles: StaticFiles
    public let cookie: SessionCookie
    public let refresher: TokenRefresher
    /// The gateway's own client-credentials tokens for `auth=client` routes.
    public let clientTokens: ClientTokenCache
    /// The signed assertion and identity headers of `identity=` routes, and the JWKS that verifies them.
    let identities: IdentityIssuer
    /// The per-API tokens of `exchange=` routes.
    let apiTokens: APITokenCache
    /// The upstreams' latest DPoP nonces (RFC 9449 §9), by origin.
    let upstreamDPoPNonces: DPoPNonces
    /// The open WebSockets, closed at their idle timeout, the end of their session and shutdown.
    public let websockets: WebSocketTunnels
    /// What the proxy tells upstreams about itself, decided once (not per request) from the configuration.
    public let forwarding: ProxyForwarding
    /// The one door for the security headers of every answer.
    let secure: SecuredAnswers
    /// The memos and per-loop copies, as one switch (on in production).
    public let speedLayer: SpeedLayer
    public let logger: Logger
    /// Where spans go when traces are exported (`OTEL_EXPORTER_OTLP_ENDPOINT`), else nil.
    let tracer: Tracer?
    /// The gateway's one clock (a manual one in tests); nothing else reads the time.
    public let clock: any GatewayClock
    /// Unix seconds from ``clock``.
    public let now: @Sendable () -> Int64

    /// - Parameters:
    ///   - providers: every provider (`ProviderRegistry.only` for one).
    ///   - upstream: how `http://` upstreams are reached (the pooled client in production).
    ///   - httpsUpstream: how `https://` upstreams are reached (by default the pooled client with TLS).
    public init(configuration: GatehouseConfiguration, providers: ProviderRegistry,
                store: any SessionStore,
                metrics: GatewayMetrics, upstream: any UpstreamTransport, httpsUpstream: (any UpstreamTransport)? = nil,
                staticFiles: StaticFiles, logger: Logger, clock: any GatewayClock = SystemClock(), tracer: Tracer? = nil,
                speedLayer: SpeedLayer = SpeedLayer()) {
        self.configuration = configuration
        self.tracer = tracer
        self.providers = providers
        self.metrics = metrics
        upstreams = Upstreams(plain: upstream, tls: httpsUpstream ?? UpstreamClients.tls(configuration, speedLayer: speedLayer))
        self.staticFiles = staticFiles
        self.logger = logger
        self.clock = clock
        let now: @Sendable () -> Int64 = { clock.unixSeconds() }
        self.now = now
        cookie = SessionCookie(configuration: configuration)
        forwarding = Self.forwarding(configuration)
        secure = Self.secured(configuration)
        self.speedLayer = speedLayer
        let sessionCache = SessionCache(store: store, configuration: configuration, logger: logger,
                                        executor: StoreExecutor(queueLimit: configuration.storeQueue,
                                                                timeout: .seconds(configuration.storeTimeout)),
                                        clock: clock, speedLayer: speedLayer,
                                        endBoard: Self.endBoard(store, logger: logger))
        sessions = sessionCache
        refresher = TokenRefresher(providers: providers, sessions: sessionCache, metrics: metrics,
                                   configuration: configuration, logger: logger, now: now)
        clientTokens = ClientTokenCache(provider: providers.first.connection, margin: Int64(configuration.refreshMargin), logger: logger, now: now)
        // `serve` requires the secret key; a gateway made without one (tests) signs with a random key.
        identities = IdentityIssuer(secretKey: configuration.secretKey ?? RandomBytes.system(32),
                                    previousSecretKey: configuration.previousSecretKey, configuration: configuration,
                                    providers: providers, speedLayer: speedLayer)
        let apiTokens = APITokenCache(margin: Int64(configuration.refreshMargin), logger: logger)
        self.apiTokens = apiTokens
        upstreamDPoPNonces = DPoPNonces()
        sessionCache.onSessionEnded { idHash in apiTokens.sessionEnded(idHash: idHash) }
        websockets = WebSocketTunnels(idleSeconds: configuration.websocketIdle, logger: logger) { idHash in
            do { return try await sessionCache.resolve(idHash: idHash, now: now(), slide: false) != nil } catch { return true }
        }
        let websockets = self.websockets
        sessionCache.onSessionEnded { idHash in websockets.sessionEnded(idHash: idHash) }
    }

    /// The context of a reloaded configuration (`GatewayRuntime.reload`): what the configuration
    /// decides made anew (routes and their caches, providers as given, cookies, headers, the session
    /// cache's rules), what holds connections or threads kept from `previous` (metrics, the upstream
    /// pools, the store's executor and end board, open WebSockets, the clock).
    init(reloading previous: GatewayContext, configuration: GatehouseConfiguration, providers: ProviderRegistry,
         store: any SessionStore, staticFiles: StaticFiles) {
        self.configuration = configuration
        tracer = previous.tracer
        self.providers = providers
        metrics = previous.metrics
        upstreams = previous.upstreams
        self.staticFiles = staticFiles
        logger = previous.logger
        clock = previous.clock
        now = previous.now
        cookie = SessionCookie(configuration: configuration)
        forwarding = Self.forwarding(configuration)
        secure = Self.secured(configuration)
        speedLayer = previous.speedLayer
        let sessionCache = SessionCache(store: store, configuration: configuration, logger: previous.logger,
                                        executor: previous.sessions.executor, clock: previous.clock,
                                        speedLayer: previous.speedLayer, endBoard: previous.sessions.sharedEndBoard)
        sessions = sessionCache
        refresher = TokenRefresher(providers: providers, sessions: sessionCache, metrics: previous.metrics,
                                   configuration: configuration, logger: previous.logger, now: previous.now)
        clientTokens = ClientTokenCache(provider: providers.first.connection, margin: Int64(configuration.refreshMargin),
                                        logger: previous.logger, now: previous.now)
        identities = IdentityIssuer(secretKey: configuration.secretKey ?? RandomBytes.system(32),
                                    previousSecretKey: configuration.previousSecretKey, configuration: configuration,
                                    providers: providers, speedLayer: previous.speedLayer)
        let apiTokens = APITokenCache(margin: Int64(configuration.refreshMargin), logger: previous.logger)
        self.apiTokens = apiTokens
        upstreamDPoPNonces = previous.upstreamDPoPNonces
        websockets = previous.websockets
        sessionCache.onSessionEnded { idHash in apiTokens.sessionEnded(idHash: idHash) }
        let websockets = self.websockets
        sessionCache.onSessionEnded { idHash in websockets.sessionEnded(idHash: idHash) }
    }

    /// What the proxy tells upstreams about itself, from the configuration.
    private static func forwarding(_ configuration: GatehouseConfiguration) -> ProxyForwarding {
        ProxyForwarding(publicURL: configuration.publicURL, trustedProxies: configuration.trustedProxies,
                        csrfHeader: configuration.csrfHeader, assertionHeader: configuration.assertionHeader,
                        forwardsUnderscoreHeaders: configuration.underscoreHeaders == .forward)
    }

    /// The security headers of the configuration (HSTS, the CSP).
    private static func secured(_ configuration: GatehouseConfiguration) -> SecuredAnswers {
        SecuredAnswers(strictTransportSecurity: configuration.strictTransportSecurity,
                       contentSecurityPolicy: configuration.contentSecurityPolicy.flatMap(SecurityHeaders.contentSecurityPolicyField))
    }

    /// The end board beside a SQLite database file, which every process on that file reads and
    /// writes; nil for other stores and in-memory databases.
    private static func endBoard(_ store: any SessionStore, logger: Logger) -> SQLiteSessionEndBoard? {
        guard let sqlite = store as? SQLiteSessionStore, sqlite.databasePath != ":memory:" else { return nil }
        let path = sqlite.databasePath
        guard let board = SQLiteSessionEndBoard(databasePath: path) else {
            logger.warning("session end board unavailable: instances sharing this database learn of each other's logouts within 0.5 s instead of at once",
                           metadata: ["file": "\(SQLiteSessionEndBoard.path(forDatabase: path))"])
            return nil
        }
        return board
    }

    /// This context for one event loop (`Gateway.loopHandler(for:)`): the same members, shared
    /// with every loop (one session cache, one set of metrics, one provider), but a context object
    /// of its own (each proxied request keeps a reference to its context) and the proxy's
    /// forwarding values in storage of their own (copied into each forwarded request).
    var loopCopy: GatewayContext { GatewayContext(copying: self) }

    private init(copying other: GatewayContext) {
        configuration = other.configuration
        providers = other.providers
        sessions = other.sessions
        metrics = other.metrics
        upstreams = other.upstreams
        staticFiles = other.staticFiles
        cookie = other.cookie
        refresher = other.refresher
        clientTokens = other.clientTokens
        identities = other.identities
        apiTokens = other.apiTokens
        upstreamDPoPNonces = other.upstreamDPoPNonces
        websockets = other.websockets
        forwarding = other.forwarding.loopCopy
        secure = other.secure
        speedLayer = other.speedLayer
        logger = other.logger
        clock = other.clock
        now = other.now
        tracer = other.tracer
    }
}

