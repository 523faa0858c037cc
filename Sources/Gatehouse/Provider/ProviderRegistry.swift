import GatehouseCore
import GatehouseOIDC
import GatehouseTelemetry
import GatehouseTime
import Logging

/// One configured provider: its settings, the configuration speaking for it (issuer, client,
/// redirect URI `/callback/NAME`…) and its connection (discovery, keys and back-off of its own).
public struct RegisteredProvider: Sendable {
    public let configuration: GatehouseConfiguration
    public let connection: ProviderConnection

    public var name: String { configuration.idp.name }
    public var displayName: String { configuration.idp.displayName }
}

/// Every provider the gateway signs users in with, in configured order: the one `default` provider,
/// or each of `GATEHOUSE_PROVIDERS`. One provider being unreachable never stops another: each
/// connection loads, backs off and retries on its own.
public final class ProviderRegistry: Sendable {
    public let all: [RegisteredProvider]
    /// Whether `GATEHOUSE_PROVIDERS` names them (paths `/callback/NAME`, metrics labels).
    public let named: Bool
    private let byName: [String: RegisteredProvider]

    /// A connection per provider of `configuration`, sharing `http`.
    /// With `tracer`, each provider's calls made for a traced request are spans.
    public convenience init(configuration: GatehouseConfiguration, http: any ProviderHTTPClient, logger: Logger,
                            clock: any GatewayClock = SystemClock(), tracer: Tracer? = nil) {
        self.init(configuration.providers.map { settings in
            let view = configuration.speaking(for: settings)
            var providerLogger = logger
            if configuration.hasNamedProviders { providerLogger[metadataKey: "oauth.provider"] = "\(settings.name)" }
            return RegisteredProvider(configuration: view, connection: ProviderConnection(
                configuration: view, http: ProviderRegistry.traced(http, provider: settings.name, tracer: tracer),
                logger: providerLogger, clock: clock))
        }, named: configuration.hasNamedProviders)
    }

    /// `http` for one provider: with a span per call when traces are exported.
    static func traced(_ http: any ProviderHTTPClient, provider: String, tracer: Tracer?) -> any ProviderHTTPClient {
        guard let tracer else { return http }
        return TracedProviderClient(base: http, provider: provider, tracer: tracer)
    }

    /// The providers as given (tests build their own connections).
    public init(_ providers: [RegisteredProvider], named: Bool) {
        precondition(!providers.isEmpty, "a gateway has at least one provider")
        all = providers
        self.named = named
        byName = Dictionary(providers.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The first provider: `auth=client` routes' token source, and the only one without `GATEHOUSE_PROVIDERS`.
    public var first: RegisteredProvider { all[0] }

    /// The registry of a gateway with one provider (no `GATEHOUSE_PROVIDERS`): `default`.
    public static func only(_ connection: ProviderConnection, configuration: GatehouseConfiguration) -> ProviderRegistry {
        ProviderRegistry([RegisteredProvider(configuration: configuration, connection: connection)], named: false)
    }

    public func provider(named name: String) -> RegisteredProvider? { byName[name] }

    /// The label metrics carry for `name`: nil with one provider (no label, as before).
    public func metricsLabel(_ name: String) -> String? { named ? name : nil }

    public func start() { for provider in all { provider.connection.start() } }
    public func stop() { for provider in all { provider.connection.stop() } }
}
