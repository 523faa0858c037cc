import Foundation
import GatehouseCore
import GatehouseOIDC
import Logging
import Synchronization

/// Everything needed to talk to the provider once its metadata is known.
public struct ProviderClients: Sendable {
    public let metadata: ProviderMetadata
    public let tokens: TokenClient
    public let idTokens: IDTokenValidator
    public let logoutTokens: LogoutTokenValidator
}

/// The provider's discovery document and keys, loaded in the background.
///
/// The gateway starts even when the provider is down: discovery is retried with back-off, `/readyz`
/// reports 503 until it succeeds, and `/login` tries once more on demand. Once loaded, the document
/// is refreshed periodically so key and endpoint changes at the provider are picked up.
public final class ProviderConnection: Sendable {
    private let configuration: GatehouseConfiguration
    private let http: any ProviderHTTPClient
    private let logger: Logger
    private let state = Mutex<ProviderClients?>(nil)
    private let loader = Mutex<Task<Void, Never>?>(nil)
    /// How often a loaded document is fetched again.
    private let refreshInterval: Duration = .seconds(3600)

    public init(configuration: GatehouseConfiguration, http: any ProviderHTTPClient, logger: Logger) {
        self.configuration = configuration
        self.http = http
        self.logger = logger
    }

    /// The loaded clients, if discovery has succeeded.
    public var current: ProviderClients? { state.withLock { $0 } }

    public var isLoaded: Bool { current != nil }

    /// Starts the background loader (idempotent).
    public func start() {
        loader.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await self.run() }
        }
    }

    public func stop() {
        loader.withLock { $0?.cancel() }
    }

    /// The clients, loading the document now if it is not loaded yet.
    public func clients() async throws(DiscoveryError) -> ProviderClients {
        if let current { return current }
        return try await load()
    }

    /// Fetches discovery (and the JWKS, so a broken key endpoint shows up as not ready).
    @discardableResult
    public func load() async throws(DiscoveryError) -> ProviderClients {
        let metadata = try await ProviderMetadata.discover(issuer: configuration.issuer, http: http)
        let method = GatehouseOIDC.ClientAuthMethod(rawValue: configuration.clientAuthMethod.rawValue) ?? .none
        let tokens: TokenClient
        do {
            tokens = try TokenClient(metadata: metadata, clientID: configuration.clientID,
                                     clientSecret: configuration.clientSecret, authMethod: method, http: http)
        } catch {
            throw .malformedDocument("token client: \(error)")
        }
        let keys = KeySet(metadata: metadata, http: http)
        do { try await keys.refresh() } catch {
            throw .malformedDocument("jwks_uri: \(error)")
        }
        let clients = ProviderClients(
            metadata: metadata, tokens: tokens,
            idTokens: IDTokenValidator(issuer: metadata.issuer, clientID: configuration.clientID, keySet: keys),
            logoutTokens: LogoutTokenValidator(issuer: metadata.issuer, clientID: configuration.clientID, keySet: keys))
        state.withLock { $0 = clients }
        return clients
    }

    private func run() async {
        var delay: Duration = .seconds(1)
        while !Task.isCancelled {
            do {
                try await load()
                logger.info("provider metadata loaded", metadata: ["oauth.issuer": "\(configuration.issuer)"])
                delay = .seconds(1)
                try? await Task.sleep(for: refreshInterval)
            } catch {
                logger.warning("provider discovery failed; retrying",
                               metadata: ["oauth.issuer": "\(configuration.issuer)", "error": "\(error)",
                                          "retry.seconds": "\(delay.components.seconds)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(60))
            }
        }
    }
}
