import HTTP1

/// Which request methods the proxy forwards (SPEC "API routes").
///
/// `CONNECT` asks the upstream to turn the connection into a tunnel: a `2xx` answer has no body and
/// every later byte on that connection is the tunnel's, so a pooled keep-alive connection would
/// carry one browser's tunnel into another browser's answer. `TRACE` (and IIS's `TRACK`) echo the
/// request back, the bearer token included (cross-site tracing). None of them is an API call; all
/// are answered `405` before any upstream or session work, as nginx and Envoy refuse `CONNECT`
/// outside their tunnelling mode.
public enum ProxyMethodPolicy {
    /// The `Allow` value of the `405` answer: the methods an API route forwards.
    public static let allowed = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"

    /// False for `CONNECT`, `TRACE` and `TRACK`, in any letter case (methods are case-sensitive, but
    /// an upstream that folds case must not be handed a tunnel either). Compares bytes only: it runs
    /// on every proxied request.
    public static func isForwardable(_ method: String) -> Bool {
        switch method.utf8.count {
        case 5: !(method.asciiCaseInsensitiveEquals("TRACE") || method.asciiCaseInsensitiveEquals("TRACK"))
        case 7: !method.asciiCaseInsensitiveEquals("CONNECT")
        default: true
        }
    }
}
