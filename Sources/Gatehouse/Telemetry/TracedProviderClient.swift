import GatehouseOIDC
import GatehouseTelemetry
import HTTP1

/// A provider's calls with a span each when made for a traced request (`gatehouse.provider`,
/// `gatehouse.operation`): the callback's token request, a refresh on an API call, and so on.
/// Calls made for no request (discovery at start, a key refresh in the background) are not spans.
struct TracedProviderClient: ProviderHTTPClient {
    let base: any ProviderHTTPClient
    let provider: String
    let tracer: Tracer

    func send(_ request: ProviderHTTPRequest) async throws(ProviderTransportError) -> ProviderHTTPResponse {
        let operation = request.operation?.rawValue ?? "call"
        guard let span = CallSpan(tracer: tracer, parent: TraceContext.current, name: request.method.rawValue, nameSuffix: operation,
                                  attributes: [SpanAttribute("gatehouse.provider", provider),
                                               SpanAttribute("gatehouse.operation", operation)]
                                      + GatewaySpans.clientAttributes(method: request.method.rawValue, url: request.url))
        else { return try await base.send(request) }
        do {
            let response = try await base.send(request)
            span.end(status: response.status)
            return response
        } catch {
            span.end(status: nil, failed: true)
            throw error
        }
    }
}
