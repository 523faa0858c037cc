import GatehouseCore
import GatehouseTime
import HTTP1
import HTTPClient

/// The one door to the upstreams: how a route's upstream is reached. The pooled client, plain or
/// with TLS, in production; a transport of the test's otherwise.
struct Upstreams: Sendable {
    /// How `http://` upstreams are reached.
    let plain: any UpstreamTransport
    /// How `https://` upstreams are reached.
    let tls: any UpstreamTransport
    /// The transports as the pooled client when they are one (production), decided once: the relay
    /// calls it directly instead of casting the transport on every request.
    let plainClient: UpstreamClient?
    let tlsClient: UpstreamClient?

    init(plain: any UpstreamTransport, tls: any UpstreamTransport) {
        self.plain = plain
        self.tls = tls
        plainClient = plain as? UpstreamClient
        tlsClient = tls as? UpstreamClient
    }

    /// The transport of `route`'s upstream.
    func transport(for route: UpstreamRoute) -> any UpstreamTransport { route.usesTLS ? tls : plain }

    /// The pooled client of `route`'s upstream, nil when a test's transport stands in for it.
    func client(for route: UpstreamRoute) -> UpstreamClient? { route.usesTLS ? tlsClient : plainClient }
}

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
    static func plain(_ configuration: GatehouseConfiguration, speedLayer: SpeedLayer = SpeedLayer()) -> UpstreamClient {
        UpstreamClient(timeouts: timeouts(configuration), speedLayer: speedLayer)
    }

    /// For `https://` routes (and `wss://` WebSockets, each on a TLS connection of its own).
    static func tls(_ configuration: GatehouseConfiguration, speedLayer: SpeedLayer = SpeedLayer()) -> UpstreamClient {
        UpstreamClient(timeouts: timeouts(configuration), usesTLS: true, speedLayer: speedLayer)
    }
}
