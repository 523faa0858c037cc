import GatehouseCore
import HTTPClient
import HTTP1
import HTTPServer

/// `https://` upstreams go through libcurl (`HTTPSUpstreamClient`: one multi handle on its own
/// thread, connections reused); redirects are passed to the browser, never followed.
///
/// - Both bodies stream with back-pressure: the browser's upload is read only as fast as the
///   upstream takes it (bounded by GATEHOUSE_MAX_BODY, `413` while no head has gone out), and the
///   answer is relayed piece by piece as the browser takes it. Server-sent events pass as they come.
/// - Content codings pass untouched: `Content-Encoding` and `Content-Length` reach the browser as
///   the upstream sent them. A head with ambiguous framing (conflicting or malformed lengths,
///   `Content-Length` with `Transfer-Encoding`, a `101`) is refused with `502` before libcurl reads
///   its body (`UpstreamResponseFraming`, the `http://` client's rules).
/// - Timeouts: connect 5 s, then the head must come within GATEHOUSE_UPSTREAM_TIMEOUT of upstream
///   silence (`504`); inside the body, `bodyIdleTimeout` of silence cuts the exchange. Time spent
///   waiting for the browser does not count.
/// - A failure before the head is a JSON error (`502`/`504`); after it, the browser's connection is
///   cut. Only a bodiless `GET`/`HEAD`/`OPTIONS` whose reused connection died before any answer
///   byte is sent once more (`CurlEasy.beforeSendingRequest`); nothing else is retried.
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
            return await writer.respond(UpstreamRelay.failure(error, context: context))
        }
        await relay(response, context: context, writer: writer)
    }

    private static func relay(_ response: HTTPSUpstreamResponse, context: GatewayContext,
                              writer: any HTTPResponseWriter) async {
        let browserHead = TLSUpstreamHead.make(status: response.head.status, upstreamHeaders: response.head.headers,
                                               framing: response.framing)
        await UpstreamRelay.stream(response, head: browserHead.head, framing: response.framing,
                                   context: context, writer: writer)
    }
}
