import GatehouseCore
import GatehouseStatic
import Logging
import Synchronization

/// A configuration reload (SPEC "A configuration file, reloaded without a restart"): the new
/// configuration is checked in full (every new or changed provider's discovery answered) before
/// anything switches; then every event loop takes the new gateway between two requests. Requests
/// already decided finish under the configuration they started with; no connection is closed.
extension GatewayRuntime {
    struct Contexts {
        var current: GatewayContext
        /// Contexts a reload replaced. Kept for the process's life (a reload is rare): their session
        /// caches and identity issuers key per-loop memos by object identity, which a freed object's
        /// successor at the same address must never inherit. Their contents are let go instead.
        var retired: [GatewayContext] = []
        var reloading = false
    }

    public enum ReloadOutcome: Sendable, Equatable {
        /// Switched; `needRestart` names the changed settings kept at their running values.
        case switched(needRestart: [String])
        /// Nothing switched: why.
        case refused(String)
    }

    /// Switches to `configuration` (already validated by the loader), or says why not.
    public func reload(to configuration: GatehouseConfiguration) async -> ReloadOutcome {
        let claimed = contexts.withLock { state -> GatewayContext? in
            guard !state.reloading else { return nil }
            state.reloading = true
            return state.current
        }
        guard let previous = claimed else { return .refused("another reload is under way") }
        defer { contexts.withLock { $0.reloading = false } }
        let (kept, needRestart) = ConfigurationReload.applying(configuration, over: startedWith)
        for provider in kept.providers {
            if let problem = ProviderConnection.clientCredentialProblem(kept.speaking(for: provider)) {
                context.metrics.configReloaded(ok: false)
                return .refused(kept.hasNamedProviders ? "\(provider.name): \(problem)" : problem)
            }
        }
        let (providers, fresh) = registry(for: kept, keeping: previous.providers, logger: previous.logger)
        // Every new or changed provider must answer its discovery before anything switches.
        for provider in fresh {
            do { _ = try await provider.connection.clients() } catch {
                for made in fresh { made.connection.stop() }
                previous.metrics.configReloaded(ok: false)
                let named = providers.named ? "provider \(provider.name): " : ""
                return .refused(named + provider.configuration.idp.ownVariableNames(in: "\(error)"))
            }
        }
        let staticFiles = kept.publicDir == previous.configuration.publicDir
            ? previous.staticFiles : StaticFiles(root: kept.publicDir, logger: previous.logger)
        let next = GatewayContext(reloading: previous, configuration: kept, providers: providers, store: store,
                                  staticFiles: staticFiles)
        sessionCaches.add(next.sessions)
        contexts.withLock { state in
            state.retired.append(state.current)
            state.current = next
        }
        await gateways.switchTo(Gateway(context: next))
        previous.metrics.configReloaded(ok: true)
        retire(previous, replacedBy: providers)
        return .switched(needRestart: needRestart)
    }

    /// The providers of `configuration`: the connection of each provider whose settings did not
    /// change is kept; `fresh` are the new ones (started, not yet known to answer).
    private func registry(for configuration: GatehouseConfiguration, keeping old: ProviderRegistry,
                          logger: Logger) -> (ProviderRegistry, fresh: [RegisteredProvider]) {
        var fresh: [RegisteredProvider] = []
        let providers = configuration.providers.map { settings -> RegisteredProvider in
            let view = configuration.speaking(for: settings)
            if let same = old.provider(named: settings.name), same.configuration.idp.isSameProvider(as: view.idp),
               same.configuration.publicURL == view.publicURL, same.configuration.securityProfile == view.securityProfile {
                return RegisteredProvider(configuration: view, connection: same.connection)
            }
            var providerLogger = logger
            if configuration.hasNamedProviders { providerLogger[metadataKey: "oauth.provider"] = "\(settings.name)" }
            let made = RegisteredProvider(configuration: view, connection: ProviderConnection(
                configuration: view, http: ProviderRegistry.traced(providerHTTP, provider: settings.name, tracer: context.tracer),
                logger: providerLogger, clock: context.clock))
            made.connection.start()
            fresh.append(made)
            return made
        }
        return (ProviderRegistry(providers, named: configuration.hasNamedProviders), fresh)
    }

    /// After the requests it decided have had their time: the retired context's session cache
    /// emptied, its per-loop memos (session ids, bearer copies, issued assertions) dropped, and the
    /// connections of providers no longer configured stopped.
    private func retire(_ old: GatewayContext, replacedBy providers: ProviderRegistry) {
        let gateways = self.gateways
        let stillUsed = Set(providers.all.map { ObjectIdentifier($0.connection) })
        let grace = UInt64(max(60, old.configuration.upstreamTimeout * 2))
        Task {
            try? await Task.sleep(for: .seconds(grace))
            old.sessions.forgetEverything()
            let keys = [ObjectIdentifier(old.sessions), ObjectIdentifier(old.identities)]
            gateways.forEachLoop { loop in
                loop.execute { for key in keys { loop.removeLocalValue(for: key) } }
            }
            for provider in old.providers.all where !stillUsed.contains(ObjectIdentifier(provider.connection)) {
                provider.connection.stop()
            }
        }
    }
}
