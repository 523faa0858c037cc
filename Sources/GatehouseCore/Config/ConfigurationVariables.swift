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
        ("GATEHOUSE_METRICS_LISTEN", "none",
         "address and port of a listener of its own for /metrics (e.g. 127.0.0.1:9090); the public port then answers 404 there"),
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
        ("GATEHOUSE_SESSION_PERSISTENT", "false",
         "true: the session cookie gets Max-Age = the session's remaining absolute lifetime (remember me); false: a browser-session cookie"),
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
        ("GATEHOUSE_WEBSOCKET_IDLE", "10m", "a proxied WebSocket silent in both directions this long is closed"),
        ("GATEHOUSE_CPU_AFFINITY", "auto",
         "auto: each event loop (one per CPU the process may use) kept on its own CPU; off: the scheduler places them"),
        ("GATEHOUSE_REFRESH_MARGIN", "60s", "refresh the access token this long before it expires"),
        ("GATEHOUSE_ROUTE_MAX_IN_FLIGHT", "512",
         "API calls in flight per route and event loop before more are refused with 503 and Retry-After (a route's max_in_flight= option wins)"),
        ("GATEHOUSE_PROVIDER_MAX_IN_FLIGHT", "64", "provider calls in flight at once before more fail at once (502/503)"),
        ("GATEHOUSE_STORE_QUEUE", "4096", "session-store calls waiting for a store thread before more are refused with 503"),
        ("GATEHOUSE_STORE_TIMEOUT", "10s", "how long a request waits for the session store before 503"),
        ("GATEHOUSE_USERINFO", "auto",
         "auto (when the provider has a userinfo_endpoint and the scopes ask for more than openid), true or false: call UserInfo after login and refresh and merge its claims"),
        ("GATEHOUSE_CLIENT_PRIVATE_KEY", "none",
         "private_key_jwt: the client's RSA or P-256 private key, PEM text or the path of a PEM file"),
        ("GATEHOUSE_CLIENT_KEY_ID", "none", "private_key_jwt: the kid of that key at the provider"),
        ("GATEHOUSE_ID_TOKEN_ALGS", "RS256 (plus the provider's algorithm when it advertises exactly one)",
         "comma-separated signing algorithms accepted for ID and logout tokens; asymmetric only"),
        ("GATEHOUSE_PROVIDER", "generic",
         "generic, auth0, google, facebook, keycloak, entra or okta: a preset of the quirks below, each also reachable with its own variable"),
        ("GATEHOUSE_AUTHORIZATION_ENDPOINT", "from discovery", "overrides the discovered authorization_endpoint"),
        ("GATEHOUSE_TOKEN_ENDPOINT", "from discovery (facebook: https://graph.facebook.com/oauth/access_token)",
         "overrides the discovered token_endpoint"),
        ("GATEHOUSE_JWKS_URI", "from discovery", "overrides the discovered jwks_uri"),
        ("GATEHOUSE_USERINFO_ENDPOINT", "from discovery", "overrides the discovered userinfo_endpoint"),
        ("GATEHOUSE_END_SESSION_ENDPOINT", "from discovery", "overrides the discovered end_session_endpoint"),
        ("GATEHOUSE_REVOCATION_ENDPOINT", "from discovery", "overrides the discovered revocation_endpoint"),
        ("GATEHOUSE_TOKEN_REQUEST", "post (facebook: get)",
         "get: token-endpoint parameters in the query (Facebook's Graph API); never a client secret in the URL except for facebook"),
        ("GATEHOUSE_LOGIN_PARAMS", "none",
         "comma-separated names of /login query parameters passed on to the authorization request, e.g. organization,invitation,login_hint,screen_hint,prompt,ui_locales; others ignored, reserved OAuth names refused"),
        ("GATEHOUSE_REQUIRE_CLAIMS", "none",
         "comma-separated name=value pairs the ID token must carry, e.g. hd=example.com,email_verified=true,org_id=org_1,tid=...; otherwise the login fails"),
        ("GATEHOUSE_PROVIDERS", "none (one provider, named default)",
         "comma-separated provider names (1-32 of a-z, 0-9, -) for several providers at once; each reads the provider variables with the prefix GATEHOUSE_IDP_<NAME>_ (PROVIDER as PROFILE), the unprefixed ones as defaults (not ISSUER, CLIENT_ID, CLIENT_SECRET)"),
        ("GATEHOUSE_DISPLAY_NAME", "the profile's name (e.g. Google), else the provider's name",
         "what the sign-in chooser and /providers show for the provider"),
        ("GATEHOUSE_DISCOVERY_URL", "{issuer}/.well-known/openid-configuration (facebook: with a trailing /)",
         "where the provider's discovery document is, when not at the issuer's well-known path"),
        ("GATEHOUSE_LONG_LIVED_TOKEN", "true for facebook, else false",
         "Facebook: exchange the short-lived user token for a long-lived one (grant_type=fb_exchange_token) after login"),
        ("GATEHOUSE_PAR", "auto",
         "auto: push the authorization request (RFC 9126 PAR) when discovery lists pushed_authorization_request_endpoint; on: always (a provider without it stops serve and check); off: never"),
        ("GATEHOUSE_CSP", "default-src 'self'; img-src 'self' data: https:; … (see docs/browser.md)",
         "the Content-Security-Policy of HTML answers (the whole policy)"),
        ("GATEHOUSE_ASSERTION_HEADER", "Gatehouse-Assertion",
         "the header carrying the signed identity assertion on identity=assertion|both routes; removed from every browser request"),
        ("GATEHOUSE_ASSERTION_TTL", "60s", "lifetime of the identity assertion (5s to 1h)"),
        ("GATEHOUSE_LOGOUT_URL", "none (auth0: {issuer}/v2/logout?client_id={client_id}&returnTo={post_logout_redirect_uri})",
         "logout template used when the provider has no end_session_endpoint; placeholders {client_id}, {post_logout_redirect_uri}, {id_token_hint}"),
    ]

    /// `GATEHOUSE_*` variables in `environment` that Gatehouse does not know (likely typos), sorted.
    /// Not an error by itself: the caller may warn.
    public static func unknownVariables(in environment: [String: String]) -> [String] {
        var known = Set(variables.map(\.name))
        // Each provider of GATEHOUSE_PROVIDERS has its own copy of the provider variables.
        let names = (environment["GATEHOUSE_PROVIDERS"] ?? "").split(separator: ",")
            .map { String($0.trimmingConfigurationWhitespace()) }.filter(ProviderSettings.isValidName)
        var reader = EnvironmentReader(environment)
        for name in names {
            reader.providerScope = name
            for variable in EnvironmentReader.providerVariables {
                if let own = reader.scopedName(variable) { known.insert(own) }
            }
        }
        return environment.keys.filter { $0.hasPrefix("GATEHOUSE_") && !known.contains($0) }.sorted()
    }
}
