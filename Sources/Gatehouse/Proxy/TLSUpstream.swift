import GatehouseCore
import HTTPClient
import HTTPServer

/// `https://` upstreams go through libcurl (`HTTPSUpstreamClient`: one multi handle on its own
/// thread, connections reused); redirects are passed to the browser, never followed.
///
/// - Both bodies stream with back-pressure: the browser's upload is read only as fast as the
///   upstream takes it (bounded by GATEHOUSE_MAX_BODY, `413` while no head has gone out), and the
///   answer is relayed piece by piece as the browser takes it. Server-sent events pass as they come.
/// - Content codings pass untouched: `Content-Encoding` and `Content-Length` reach the browser as
///   the upstream sent them.
/// - Timeouts: connect 5 s, then the head must come within GATEHOUSE_UPSTREAM_TIMEOUT of upstream
///   silence (`504`); inside the body, `bodyIdleTimeout` of silence cuts the exchange. Time spent
///   waiting for the browser does not count.
/// - A failure before the head is a JSON error (`502`/`504`); after it, the browser's connection is
///   cut. Nothing is retried.
enum TLSUpstream {
    /// Process-wide: its connection cache is what makes reuse across requests possible.
    static let client = HTTPSUpstreamClient()
    /// Longest silence in an upstream body before the exchange is cut (the `http://` client's default).
    static let bodyIdleTimeoutNanoseconds: UInt64 = 300_000_000_000

    static func forward(_ request: UpstreamRequest, body: any HTTPRequestBody, context: GatewayContext,
                        writer: any HTTPResponseWriter) async {
        var timeouts = HTTPSUpstreamClient.Timeouts()
        let seconds = UInt64(max(1, context.configuration.upstreamTimeout))
        let (firstByte, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        timeouts.firstByteNanoseconds = overflow ? .max : firstByte
        timeouts.bodyIdleNanoseconds = bodyIdleTimeoutNanoseconds
        let response: HTTPSUpstreamResponse
        do {
            response = try await client.send(request, body: body, timeouts: timeouts,
                                              maxBodyBytes: context.configuration.maxBody)
        } catch {
            return await writer.respond(failure(error, context: context))
        }
        await relay(response, context: context, writer: writer)
    }

    private static func relay(_ response: HTTPSUpstreamResponse, context: GatewayContext,
                              writer: any HTTPResponseWriter) async {
        let framing = TLSUpstreamHead.make(status: response.head.status, upstreamHeaders: response.head.headers)
        do {
            try await writer.writeHead(framing.head, contentLength: framing.contentLength)
        } catch {
            return response.discard()
        }
        while true {
            let piece: [UInt8]?
            do {
                piece = try await response.nextBodyPiece()
            } catch {
                // Mid-body failure (upstream or the browser's own upload): the head is gone, so the
                // only honest signal is a cut connection.
                if case .requestBody = error {} else { context.metrics.upstreamError(kind: "body") }
                context.logger.warning("upstream body failed", metadata: ["error": "\(error)"])
                return writer.abort()
            }
            guard let piece else { break }
            do { try await writer.writeBody(piece) } catch {
                return response.discard()
            }
        }
        try? await writer.finish()
    }

    /// The JSON answer for an exchange that failed before the upstream's head (as the `http://` path).
    private static func failure(_ error: UpstreamError, context: GatewayContext) -> HTTPResponse {
        switch error {
        case .connectTimeout, .firstByteTimeout:
            context.metrics.upstreamError(kind: "timeout")
            context.logger.warning("upstream timed out", metadata: ["error": "\(error)"])
            return HTTPResponse.jsonError(status: 504, error: "upstream_timeout",
                                          description: "The upstream did not answer in time.")
        case .requestBody(.tooLarge(let limit)):
            return HTTPResponse.jsonError(status: 413, error: "payload_too_large",
                                          description: "The request body is larger than \(limit) bytes.")
        case .requestBody:
            return HTTPResponse.jsonError(status: 400, error: "invalid_request_body",
                                          description: "The request body could not be read.")
        case .invalidRequest:
            context.logger.warning("upstream request refused", metadata: ["error": "\(error)"])
            return HTTPResponse.jsonError(status: 400, error: "invalid_path",
                                          description: "The path cannot be routed.")
        default:
            context.metrics.upstreamError(kind: "unreachable")
            context.logger.warning("upstream failed", metadata: ["error": "\(error)"])
            return HTTPResponse.jsonError(status: 502, error: "upstream_unreachable",
                                          description: "The upstream could not be reached.")
        }
    }
}
