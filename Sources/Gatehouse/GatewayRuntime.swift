import FoundationEssentials
import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import GatehouseStatic
import GatehouseTelemetry
import GatehouseTime
import HTTPClient
import HTTP1
import HTTPServer
import Logging
import Synchronization
import TLSTransport

/// Errors that stop `gatehouse serve` at start, each with the exit code the contract gives it.
public enum GatewayStartError: Error, CustomStringConvertible {
    case configuration(String)
    case database(String)
    case bind(String)

    public var exitCode: Int32 {
        switch self {
        case .configuration: 64
        case .database: 69
        case .bind: 69
        }
    }

    public var description: String {
        switch self {
        case .configuration(let why): why
        case .database(let why): "database: \(why)"
        case .bind(let why): "cannot listen: \(why)"
        }
    }
}

/// A running gateway: server, store, provider loader and background maintenance.
public final class GatewayRuntime: Sendable {
    public let server: HTTPServer
    /// The `GATEHOUSE_METRICS_LISTEN` listener, when configured.
    public var metricsServer: HTTPServer? { side.metrics }
    /// The metrics and redirect listeners, and the certificate's watch.
    let side: SideListeners
    /// The context of the configuration in force (the last reload's).
    public var context: GatewayContext { contexts.withLock { $0.current } }
    /// The configuration in force and the ones it replaced (kept: see `reload`).
    let contexts: Mutex<Contexts>
    /// The handler the server asks, switched by a reload.
    let gateways: GatewaySwitch
    /// Every session cache made (one per configuration), each told of sessions ended elsewhere.
    let sessionCaches: SessionCaches
    /// The provider HTTP client every configuration's providers share.
    let providerHTTP: HTTPProviderClient
    let startedWith: GatehouseConfiguration
    let store: any SessionStore & SessionDatabaseLifecycle
    private let maintenance: Task<Void, Never>
    /// PostgreSQL: hears sessions ended by other instances and commands.
    private let endListener: PostgresSessionEndListener?

    public var port: Int { server.localPort }

    /// Opens the database (applying migrations), starts discovery and the server. Every time the
    /// gateway reads comes from `clock` (a manual clock in tests).
    public static func start(configuration: GatehouseConfiguration, logger: Logger,
                             loopCount: Int? = nil, clock: any GatewayClock = SystemClock(),
                             tracer: Tracer? = nil) throws(GatewayStartError) -> GatewayRuntime {
        for provider in configuration.providers {
            if let problem = ProviderConnection.clientCredentialProblem(configuration.speaking(for: provider)) {
                throw .configuration(configuration.hasNamedProviders ? "\(provider.name): \(problem)" : problem)
            }
        }
        guard let key = configuration.secretKey else {
            throw .configuration("GATEHOUSE_SECRET_KEY: required for serve (generate one with `gatehouse keygen`)")
        }
        let sealer: TokenSealer
        do { sealer = try TokenSealer(current: key, previous: configuration.previousSecretKey) } catch {
            throw .configuration("GATEHOUSE_SECRET_KEY: \(error)")
        }
        // Before the store opens: a certificate that cannot serve stops the start with nothing to close.
        let certificate = try ListenerCertificate.make(configuration.listenerTLS, secretKey: key, clock: clock)
        let store: any SessionStore & SessionDatabaseLifecycle
        let target = SessionDatabaseTarget(configuration.databasePath)
        do {
            store = try target.openStore(sealer: sealer, logger: logger)
            let applied = try store.migrate()
            if !applied.isEmpty {
                logger.info("migrations applied", metadata: ["db.migrations": "\(applied.map(\.version))"])
            }
        } catch {
            // `target` prints a PostgreSQL URI without its password.
            throw .database("\(target): \(error)")
        }
        let http = HTTPProviderClient(timeout: configuration.providerTimeout, maxInFlight: configuration.providerMaxInFlight)
        let providers = ProviderRegistry(configuration: configuration, http: http, logger: logger, clock: clock, tracer: tracer)
        let metrics = GatewayMetrics()
        if let tracer {
            metrics.countDroppedSpans { tracer.droppedSpans }
            (store as? any SessionOperationsObservable)?.operations.observe(with: StoreSpans(tracer: tracer))
        }
        // One switch for every memo: the server's parsers, the upstream connections, the gateway's.
        let speedLayer = SpeedLayer()
        let context = GatewayContext(configuration: configuration, providers: providers,
                                     store: store, metrics: metrics,
                                     upstream: UpstreamClients.plain(configuration, speedLayer: speedLayer),
                                     staticFiles: StaticFiles(root: configuration.publicDir, logger: logger),
                                     logger: logger, clock: clock, tracer: tracer, speedLayer: speedLayer)
        let sessionCaches = SessionCaches(context.sessions)
        let endListener = listenForEndedSessions(store, context: context, sessionCaches: sessionCaches, logger: logger)
        let gateway = GatewaySwitch(Gateway(context: context))
        if let certificate { metrics.reportCertificateExpiry { certificate.notAfter } }
        let serverConfig = serverConfiguration(configuration, certificate: certificate, speedLayer: speedLayer,
                                               loopCount: loopCount)
        let observer = GatewayObserver(metrics: metrics, logger: logger, classify: { gateway.routeClass(of: $0) },
                                       tracer: tracer, route: { gateway.routeTemplate(of: $0) },
                                       scheme: certificate == nil ? "http" : "https")
        let server = HTTPServer(configuration: serverConfig, handler: gateway, observer: observer,
                                defaultHeaders: context.secure.serverDefaults, logger: logger)
        // The side listeners first: a port they cannot have stops the start before the public one opens.
        let side: SideListeners
        do throws(GatewayStartError) {
            side = try SideListeners.start(configuration, context: context, certificate: certificate, store: store)
        } catch {
            try? store.close()
            throw error
        }
        do { try server.start() } catch {
            side.stop()
            try? store.close()
            throw .bind("\(configuration.listen.host):\(configuration.listen.port): \(error)")
        }
        providers.start()
        tracer?.start()
        side.acme?.start()
        // Counted on its own thread: a /metrics scrape (on an event loop) never reads the database.
        metrics.activeSessions.start { try store.countActiveSessions(now: context.now()) }
        let maintenance = purgeInBackground(store, context: context, logger: logger)
        return GatewayRuntime(server: server, side: side, context: context, store: store,
                              maintenance: maintenance, endListener: endListener, gateways: gateway,
                              sessionCaches: sessionCaches, providerHTTP: http, configuration: configuration)
    }

    /// The public listener's settings from the configuration.
    private static func serverConfiguration(_ configuration: GatehouseConfiguration, certificate: ServerCertificate?,
                                            speedLayer: SpeedLayer, loopCount: Int?) -> HTTPServerConfiguration {
        var serverConfig = HTTPServerConfiguration()
        serverConfig.tls = certificate
        serverConfig.speedLayer = speedLayer
        serverConfig.host = configuration.listen.host
        serverConfig.port = configuration.listen.port
        serverConfig.maxBodyBytes = configuration.maxBody
        if let loopCount { serverConfig.loopCount = loopCount }
        serverConfig.pinsLoopsToCPUs = configuration.cpuAffinity == .auto
        return serverConfig
    }

    /// PostgreSQL: every instance hears of every ended session at once (migration 0005's trigger),
    /// and every session cache made here forgets it.
    private static func listenForEndedSessions(_ store: any SessionStore, context: GatewayContext, sessionCaches: SessionCaches,
                                               logger: Logger) -> PostgresSessionEndListener? {
        guard let postgres = store as? PostgresSessionStore else { return nil }
        let sessions = sessionCaches
        let listener = PostgresSessionEndListener(pool: postgres.pool, logger: logger) { payload in
            guard let payload else { return sessions.endedElsewhere(nil) }
            if payload.hasPrefix(SessionEndBarrier.markerPrefix) {
                sessions.barrier?.heard(payload)
                return
            }
            sessions.endedElsewhere(payload)
        }
        let barrier = SessionEndBarrier(announce: { marker throws(SessionStoreError) in try listener.announce(marker) },
                                        isListening: { listener.isListening }, executor: context.sessions.executor, logger: logger)
        sessionCaches.barrier = barrier
        context.sessions.attach(barrier)
        listener.start()
        return listener
    }

    /// Expired sessions, pending logins and back-channel jtis, purged every minute in the background.
    private static func purgeInBackground(_ store: any SessionStore & SessionDatabaseLifecycle, context: GatewayContext,
                                          logger: Logger) -> Task<Void, Never> {
        Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(60))
                // On the store threads: a purge waiting on a lock must not hold a thread of the
                // cooperative pool (the token refreshes' tasks run there).
                let now = context.now()
                if let counts = try? await context.sessions.executor.run({ () throws(SessionStoreError) in
                       try store.purgeExpired(now: now)
                   }),
                   counts.sessions + counts.pendingLogins + counts.logoutJTIs > 0 {
                    logger.debug("purged expired rows", metadata: ["db.sessions": "\(counts.sessions)",
                                                                    "db.pending_logins": "\(counts.pendingLogins)"])
                }
            }
        }
    }

    private init(server: HTTPServer, side: SideListeners, context: GatewayContext,
                 store: any SessionStore & SessionDatabaseLifecycle, maintenance: Task<Void, Never>,
                 endListener: PostgresSessionEndListener?, gateways: GatewaySwitch, sessionCaches: SessionCaches,
                 providerHTTP: HTTPProviderClient, configuration: GatehouseConfiguration) {
        self.endListener = endListener
        self.server = server
        self.side = side
        contexts = Mutex(Contexts(current: context))
        self.store = store
        self.maintenance = maintenance
        self.gateways = gateways
        self.sessionCaches = sessionCaches
        self.providerHTTP = providerHTTP
        startedWith = configuration
    }

    /// Graceful stop: no new connections, in-flight requests get up to `grace`, then the database is
    /// checkpointed and closed.
    public func shutdown(grace: Duration = .seconds(25)) async {
        await server.shutdown(graceNanoseconds: TimeUnits.nanoseconds(grace))
        await side.shutdown()
        maintenance.cancel()
        context.metrics.activeSessions.stop()
        for context in contexts.withLock({ [$0.current] + $0.retired }) { context.providers.stop() }
        endListener?.stop()
        do { try store.close() } catch {
            context.logger.error("database close failed", metadata: ["error": "\(error)"])
        }
        // Last: the spans of the requests that just ended go out too.
        await context.tracer?.shutdown()
    }
}

/// Every session cache the configurations made: sessions another instance ended (PostgreSQL's
/// announcements) are forgotten by each, and each new one joins the end barrier (which the
/// listener hands markers to, set once both exist: each needs the other).
final class SessionCaches: Sendable {
    private let caches: Mutex<[SessionCache]>
    private let storedBarrier = Mutex<SessionEndBarrier?>(nil)

    init(_ first: SessionCache) { caches = Mutex([first]) }

    var barrier: SessionEndBarrier? {
        get { storedBarrier.withLock { $0 } }
        set { storedBarrier.withLock { $0 = newValue } }
    }

    func add(_ cache: SessionCache) {
        if let barrier { cache.attach(barrier) }
        caches.withLock { $0.append(cache) }
    }

    func endedElsewhere(_ idHash: String?) {
        for cache in caches.withLock({ $0 }) { cache.endedElsewhere(idHash) }
    }
}
