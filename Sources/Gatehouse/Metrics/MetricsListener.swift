import EventLoops
import GatehouseCore
import HTTP1
import HTTPServer

/// The listener of `GATEHOUSE_METRICS_LISTEN`: `/metrics` and nothing else (404), so a scraper can
/// be given a port the public one never serves (the public port answers `/metrics` with 404).
struct MetricsListener: HTTPHandler {
    let context: GatewayContext

    func answer(_ head: HTTPRequestHead, _ connection: RequestConnection) -> HandlerAnswer {
        guard head.path == "/metrics" else {
            return .now(context.secure.response(HTTPResponse.jsonError(status: 404, error: "not_found", description: "Not found.")))
        }
        guard head.method == "GET" || head.method == "HEAD" else {
            return .now(context.secure.response(Responses.methodNotAllowed("GET, HEAD")))
        }
        return .now(context.secure.response(OpsEndpoints.metrics(context)))
    }

    /// Starts the listener on `address` (one event loop: a scraper's few requests).
    static func start(_ address: ListenAddress, context: GatewayContext) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.host = address.host
        configuration.port = address.port
        configuration.loopCount = 1
        configuration.pinsLoopsToCPUs = false
        let server = HTTPServer(configuration: configuration, handler: MetricsListener(context: context),
                                defaultHeaders: context.secure.serverDefaults, logger: context.logger)
        try server.start()
        return server
    }
}
