import GatehouseCore
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
