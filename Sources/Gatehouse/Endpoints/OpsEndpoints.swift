import GatehouseCore
import HTTP1

/// `/healthz`, `/readyz` and `/metrics`: probes for orchestrators and scrapers.
enum OpsEndpoints {
    /// Liveness: the process runs and its loops answer.
    static func health() -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"],
                     body: "ok\n")
    }

    /// Readiness: the database answers and at least one provider's metadata is loaded (one
    /// provider down stops no other); the body lists each provider's state. Asks the store, so it
    /// runs in the request's task (off the loop's fast path) and awaits the store's threads.
    static func readiness(_ context: GatewayContext) async -> HTTPResponse {
        let states = context.providers.all.map { provider in ProviderReadiness(provider) }
        let list = "\"providers\":[" + states.map(\.json).joined(separator: ",") + "]"
        do {
            try await context.sessions.ping()
        } catch {
            return notReady("database_unavailable", "The session database does not answer.", list)
        }
        if case .some(.none) = context.metrics.certificateExpiry {
            return notReady("tls_certificate_missing", "No TLS certificate is held yet (the ACME order has not completed).", list)
        }
        guard states.contains(where: \.isLoaded) else {
            // The reasons name URLs and issuers only (no secrets); an operator needs them to act.
            let reasons = states.map(\.reason).joined(separator: "; ")
            let what = states.count == 1 ? "The OpenID provider's discovery document is" : "No provider's discovery document is"
            return notReady("provider_metadata_not_loaded", "\(what) not loaded (\(reasons)).", list)
        }
        return Responses.json(200, Array("{\"status\":\"ready\",\(list)}".utf8))
    }

    private static func notReady(_ error: String, _ description: String, _ list: String) -> HTTPResponse {
        Responses.json(503, Array("{\"error\":\(JSONString.quoted(error)),\"error_description\":\(JSONString.quoted(description)),\(list)}".utf8))
    }

    /// One provider's line in `/readyz`.
    private struct ProviderReadiness {
        let name: String
        let state: String
        let reason: String
        var isLoaded: Bool { state == "loaded" }

        init(_ provider: RegisteredProvider) {
            name = provider.name
            switch provider.connection.status {
            case .loaded: (state, reason) = ("loaded", "\(provider.name): loaded")
            case .loading: (state, reason) = ("loading", "\(provider.name): not loaded yet")
            case .failed(let error):
                let kind = error.isMisconfiguration ? "misconfigured provider" : "provider unreachable"
                (state, reason) = ("failed", "\(provider.name): \(kind): "
                                   + provider.configuration.idp.ownVariableNames(in: "\(error)"))
            }
        }

        var json: String {
            "{\"name\":\(JSONString.quoted(name)),\"state\":\(JSONString.quoted(state))"
                + (isLoaded ? "" : ",\"reason\":\(JSONString.quoted(reason))") + "}"
        }
    }

    /// Answered on the event loop, so it must never wait for the database: the active-session
    /// gauge is the value `ActiveSessionsGauge` counted in the background.
    static func metrics(_ context: GatewayContext) -> HTTPResponse {
        HTTPResponse(status: 200,
                     headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8", "Cache-Control": "no-store"],
                     body: context.metrics.render() + "# HELP gatehouse_websockets_open Proxied WebSockets currently open.\n"
                        + "# TYPE gatehouse_websockets_open gauge\ngatehouse_websockets_open \(context.websockets.count)\n")
    }
}
