import GatehouseCore
import HTTP1

/// `/healthz`, `/readyz` and `/metrics`: probes for orchestrators and scrapers.
enum OpsEndpoints {
    /// Liveness: the process runs and its loops answer.
    static func health() -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"],
                     body: "ok\n")
    }

    /// Readiness: the database answers and the provider's metadata is loaded. Asks the store, so it
    /// runs in the request's task (off the loop's fast path) and awaits the store's threads.
    static func readiness(_ context: GatewayContext) async -> HTTPResponse {
        do {
            try await context.sessions.ping()
        } catch {
            return HTTPResponse.jsonError(status: 503, error: "database_unavailable",
                                          description: "The session database does not answer.")
        }
        switch context.provider.status {
        case .loaded:
            break
        case .loading:
            return HTTPResponse.jsonError(status: 503, error: "provider_metadata_not_loaded",
                                          description: "The OpenID provider's discovery document is not loaded yet.")
        case .failed(let error):
            // The reason names URLs and issuers only (no secrets); an operator needs it to act.
            let kind = error.isMisconfiguration ? "misconfigured provider" : "provider unreachable"
            return HTTPResponse.jsonError(status: 503, error: "provider_metadata_not_loaded",
                                          description: "The OpenID provider's discovery document is not loaded (\(kind)): \(error)")
        }
        return Responses.json(200, Array("{\"status\":\"ready\"}".utf8))
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
