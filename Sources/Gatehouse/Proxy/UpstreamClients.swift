import GatehouseCore
import GatehouseTime
import HTTPClient

/// The clients of the proxy's upstreams: the same pooled event-loop client (`UpstreamClient`) for
/// `http://` and `https://`, the latter with TLS (OpenSSL on the loop, the system CA bundle parsed
/// once; `TLSClientContext`). Both behave alike:
///
/// - Both bodies stream with back-pressure: the browser's upload (bounded by GATEHOUSE_MAX_BODY
///   in the server) is written only as fast as the upstream takes it, and the answer is relayed
///   piece by piece as the browser takes it. Server-sent events pass as they come.
/// - Content codings pass untouched; a head with ambiguous framing is refused with `502`
///   (`UpstreamResponseFraming`). Redirects are passed to the browser, never followed.
/// - Timeouts: connect (TLS handshake included) 5 s, then the head must come within
///   GATEHOUSE_UPSTREAM_TIMEOUT (`504`); inside the body, 300 s of silence cuts the exchange.
/// - Only a request that cannot run twice is sent again after a reused connection died before
///   any answer byte (`UpstreamClient.mayRetry`).
enum UpstreamClients {
    static func timeouts(_ configuration: GatehouseConfiguration) -> UpstreamClient.Timeouts {
        var timeouts = UpstreamClient.Timeouts()
        timeouts.firstByteNanoseconds = TimeUnits.nanoseconds(seconds: max(1, configuration.upstreamTimeout))
        return timeouts
    }

    /// For `http://` routes.
    static func plain(_ configuration: GatehouseConfiguration) -> UpstreamClient {
        UpstreamClient(timeouts: timeouts(configuration))
    }

    /// For `https://` routes (and `wss://` WebSockets, each on a TLS connection of its own).
    static func tls(_ configuration: GatehouseConfiguration) -> UpstreamClient {
        UpstreamClient(timeouts: timeouts(configuration), usesTLS: true)
    }
}
