import FoundationEssentials
import GatehouseEncoding

/// Checks on URLs that come from configuration or a discovery document.
public enum ProviderURL {
    /// `nil` when `url` is an absolute `https` URL (or `http` on a loopback host) with a host and
    /// no fragment; otherwise the reason it is refused, for the operator.
    public static func problem(with url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            return "is not an absolute URL"
        }
        guard let host = components.host, !host.isEmpty else { return "has no host" }
        if components.fragment != nil { return "has a fragment (RFC 6749 §3.1)" }
        switch scheme {
        case "https":
            return nil
        case "http":
            return isLoopbackHost(host) ? nil : "uses http on a non-loopback host; https is required"
        default:
            return "has scheme \(scheme); https is required"
        }
    }

    /// `localhost`, `127.0.0.0/8` or `::1` (with or without brackets): `LoopbackHost`, the one
    /// loopback rule of the gateway.
    public static func isLoopbackHost(_ host: String) -> Bool {
        LoopbackHost.contains(host)
    }
}
