import GatehouseCore
import HTTPClient
import HTTP1

/// The transport of `https://` upstreams: libcurl (`HTTPSUpstreamClient`: one multi handle on its
/// own thread, connections reused); redirects are passed to the browser, never followed.
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
struct TLSUpstream: UpstreamTransport {
    /// Process-wide: its connection cache is what makes reuse across requests possible. Created
    /// (and its thread started) by the first `https://` exchange.
    static let client = HTTPSUpstreamClient()
    /// Longest silence in an upstream body before the exchange is cut (the `http://` client's default).
    static let bodyIdleTimeoutNanoseconds: UInt64 = 300_000_000_000

    let timeouts: HTTPSUpstreamClient.Timeouts
    let maxBodyBytes: Int

    init(configuration: GatehouseConfiguration) {
        var timeouts = HTTPSUpstreamClient.Timeouts()
        let seconds = UInt64(max(1, configuration.upstreamTimeout))
        let (firstByte, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        timeouts.firstByteNanoseconds = overflow ? .max : firstByte
        timeouts.bodyIdleNanoseconds = Self.bodyIdleTimeoutNanoseconds
        self.timeouts = timeouts
        maxBodyBytes = configuration.maxBody
    }

    func exchange(_ request: UpstreamRequest, body: any HTTPRequestBody) async throws(UpstreamError) -> any UpstreamAnswer {
        try await Self.client.send(request, body: body, timeouts: timeouts, maxBodyBytes: maxBodyBytes)
    }
}

extension TLSUpstream: UpstreamSwitchingTransport {
    /// `wss://`: a TLS connection of its own per WebSocket (`HTTPSUpstreamClient.switchProtocols`).
    func switchProtocols(_ request: UpstreamRequest) async throws(UpstreamError) -> UpstreamSwitch {
        try await Self.client.switchProtocols(request, timeouts: timeouts)
    }
}
