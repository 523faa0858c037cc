extension GatehouseConfiguration {
    /// Every environment variable Gatehouse reads, with its default and meaning (for `--help`).
    public static let variables: [(name: String, default: String, meaning: String)] = [
        ("GATEHOUSE_ISSUER", "required",
         "OpenID provider issuer; https, or http only for localhost, 127.0.0.0/8 and [::1]"),
        ("GATEHOUSE_CLIENT_ID", "required", "client id registered at the provider"),
        ("GATEHOUSE_CLIENT_SECRET", "none", "client secret; when set the client authenticates to the token endpoint"),
        ("GATEHOUSE_CLIENT_AUTH_METHOD", "client_secret_basic if a secret is set, else none",
         "client_secret_basic, client_secret_post, client_secret_jwt, private_key_jwt or none"),
        ("GATEHOUSE_PUBLIC_URL", "http://localhost:8080",
         "the origin the browser uses; redirect_uri is {PUBLIC_URL}/callback"),
        ("GATEHOUSE_LISTEN", "0.0.0.0:8080", "address and port to bind ([::]:8080 for IPv6)"),
        ("GATEHOUSE_SCOPES", "openid profile email offline_access",
         "space-separated scopes; openid is always included"),
        ("GATEHOUSE_AUTH_PARAMS", "none",
         "extra authorization-request parameters in URL-query syntax, e.g. audience=https://api.example.com&connection=github"),
        ("GATEHOUSE_ROUTES", "none",
         "comma-separated PREFIX=UPSTREAM_URL pairs, e.g. /api=http://127.0.0.1:9000; an upstream path replaces the prefix"),
        ("GATEHOUSE_DATABASE", "gatehouse.sqlite", "SQLite file path, or a PostgreSQL URI postgres://user:password@host:5432/db"),
        ("GATEHOUSE_SECRET_KEY", "required for serve",
         "base64 of 32 random bytes (gatehouse keygen); encrypts tokens at rest"),
        ("GATEHOUSE_SECRET_KEY_PREVIOUS", "none", "previous secret key, still used to decrypt older sessions"),
        ("GATEHOUSE_PUBLIC_DIR", "Public", "folder of the SPA served at /"),
        ("GATEHOUSE_SESSION_IDLE", "1h", "sliding idle timeout (90s, 30m, 8h, 14d or seconds)"),
        ("GATEHOUSE_SESSION_LIFETIME", "24h", "absolute session lifetime"),
        ("GATEHOUSE_COOKIE_NAME", "__Host-Http-gatehouse when PUBLIC_URL is https, else gatehouse",
         "session cookie name"),
        ("GATEHOUSE_COOKIE_SAMESITE", "Strict", "Strict or Lax for the session cookie"),
        ("GATEHOUSE_CSRF_HEADER", "X-CSRF",
         "header every /user, POST /logout and API request must carry with the value 1"),
        ("GATEHOUSE_HSTS", "max-age=31536000 when PUBLIC_URL is https",
         "Strict-Transport-Security on every answer over https: max-age=N[; includeSubDomains][; preload], or off; never sent on http"),
        ("GATEHOUSE_POST_LOGOUT_REDIRECT_URI", "{PUBLIC_URL}/", "where the provider sends the browser after logout"),
        ("GATEHOUSE_LOG_LEVEL", "info", "trace, debug, info, notice, warning, error or critical"),
        ("GATEHOUSE_LOG_FORMAT", "json", "json (one object a line) or text"),
        ("GATEHOUSE_MAX_BODY", "10m", "largest request body on API routes: bytes, or with a binary suffix k, m, g"),
        ("GATEHOUSE_PROVIDER_TIMEOUT", "10s", "time limit for each call to the provider"),
        ("GATEHOUSE_TRUSTED_PROXIES", "none",
         "comma-separated CIDRs of load balancers whose X-Forwarded-For is kept and appended to"),
        ("GATEHOUSE_UPSTREAM_TIMEOUT", "30s", "time limit for an upstream's first response byte"),
        ("GATEHOUSE_REFRESH_MARGIN", "60s", "refresh the access token this long before it expires"),
        ("GATEHOUSE_USERINFO", "auto",
         "auto (when the provider has a userinfo_endpoint and the scopes ask for more than openid), true or false: call UserInfo after login and refresh and merge its claims"),
        ("GATEHOUSE_CLIENT_PRIVATE_KEY", "none",
         "private_key_jwt: the client's RSA or P-256 private key, PEM text or the path of a PEM file"),
        ("GATEHOUSE_CLIENT_KEY_ID", "none", "private_key_jwt: the kid of that key at the provider"),
        ("GATEHOUSE_ID_TOKEN_ALGS", "RS256 (plus the provider's algorithm when it advertises exactly one)",
         "comma-separated signing algorithms accepted for ID and logout tokens; asymmetric only"),
    ]

    /// `GATEHOUSE_*` variables in `environment` that Gatehouse does not know (likely typos), sorted.
    /// Not an error by itself: the caller may warn.
    public static func unknownVariables(in environment: [String: String]) -> [String] {
        let known = Set(variables.map(\.name))
        return environment.keys.filter { $0.hasPrefix("GATEHOUSE_") && !known.contains($0) }.sorted()
    }
}
