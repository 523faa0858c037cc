import Logging
import Testing
@testable import GatehouseCore
import GatehouseEncoding

/// A minimal valid environment; tests add or override variables.
private func env(_ extra: [String: String] = [:]) -> [String: String] {
    var e = ["GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa"]
    for (k, v) in extra { e[k] = v }
    return e
}

private let aKey = Base64.encode(Array(repeating: 7, count: 32))

private func load(_ e: [String: String], requireSecretKey: Bool = false) -> Result<GatehouseConfiguration, ConfigurationErrors> {
    GatehouseConfiguration.load(environment: e, requireSecretKey: requireSecretKey)
}

private func config(_ extra: [String: String] = [:]) throws -> GatehouseConfiguration {
    try load(env(extra)).get()
}

/// The issue descriptions for an environment that must fail.
private func issues(_ e: [String: String], requireSecretKey: Bool = false) -> [String] {
    switch load(e, requireSecretKey: requireSecretKey) {
    case .success: []
    case .failure(let errors): errors.issues.map(\.description)
    }
}

@Suite("Configuration defaults")
struct ConfigurationDefaultsTests {
    @Test("SPEC defaults apply when only the required variables are set")
    func defaults() throws {
        let c = try config()
        #expect(c.issuer == "https://idp.example.com")
        #expect(c.clientID == "spa")
        #expect(c.clientSecret == nil)
        #expect(c.clientAuthMethod == .none)
        #expect(c.publicURL.origin == "http://localhost:8080")
        #expect(c.redirectURI == "http://localhost:8080/callback")
        #expect(c.listen == ListenAddress(host: "0.0.0.0", port: 8080))
        #expect(c.scopes == ["openid", "profile", "email", "offline_access"])
        #expect(c.authParams.isEmpty)
        #expect(c.routes.isEmpty)
        #expect(c.databasePath == "gatehouse.sqlite")
        #expect(c.secretKey == nil)
        #expect(c.previousSecretKey == nil)
        #expect(c.publicDir == "Public")
        #expect(c.sessionIdle == 3_600)
        #expect(c.sessionLifetime == 86_400)
        #expect(c.cookieName == "gatehouse")
        #expect(c.cookieSameSite == .strict)
        #expect(!c.cookieSecure)
        #expect(c.csrfHeader == "X-CSRF")
        #expect(c.postLogoutRedirectURI == "http://localhost:8080/")
        #expect(c.logLevel == .info)
        #expect(c.logFormat == .json)
        #expect(c.maxBody == 10_485_760)
        #expect(c.providerTimeout == 10)
        #expect(c.trustedProxies.isEmpty)
        #expect(c.upstreamTimeout == 30)
        #expect(c.refreshMargin == 60)
        #expect(c.discoveryURL == "https://idp.example.com/.well-known/openid-configuration")
    }

    @Test("https public URL defaults the cookie to __Host-Http-gatehouse and Secure")
    func httpsCookie() throws {
        let c = try config(["GATEHOUSE_PUBLIC_URL": "https://app.example.com"])
        #expect(c.cookieName == "__Host-Http-gatehouse")
        #expect(c.cookieSecure)
        #expect(c.redirectURI == "https://app.example.com/callback")
        #expect(c.postLogoutRedirectURI == "https://app.example.com/")
    }

    @Test("a client secret defaults the auth method to client_secret_basic")
    func secretDefaultsToBasic() throws {
        let c = try config(["GATEHOUSE_CLIENT_SECRET": "s3cret"])
        #expect(c.clientSecret == "s3cret")
        #expect(c.clientAuthMethod == .clientSecretBasic)
    }

    @Test("blank optional values count as unset")
    func blankIsUnset() throws {
        let c = try config(["GATEHOUSE_CLIENT_SECRET": "", "GATEHOUSE_SESSION_IDLE": "  ", "GATEHOUSE_ROUTES": ""])
        #expect(c.clientSecret == nil)
        #expect(c.sessionIdle == 3_600)
    }

    @Test("every variable is documented once, GATEHOUSE_* only")
    func documented() {
        let names = GatehouseConfiguration.variables.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names.allSatisfy { $0.hasPrefix("GATEHOUSE_") })
        for required in ["GATEHOUSE_ISSUER", "GATEHOUSE_SECRET_KEY_PREVIOUS", "GATEHOUSE_REFRESH_MARGIN", "GATEHOUSE_UPSTREAM_TIMEOUT"] {
            #expect(names.contains(required))
        }
        #expect(GatehouseConfiguration.variables.allSatisfy { !$0.default.isEmpty && !$0.meaning.isEmpty })
    }

    @Test("unknown GATEHOUSE_ variables are listed (typos)")
    func unknown() {
        let e = env(["GATEHOUSE_SESSION_IDEL": "1h", "HOME": "/root"])
        #expect(GatehouseConfiguration.unknownVariables(in: e) == ["GATEHOUSE_SESSION_IDEL"])
    }

    @Test("description never shows secrets")
    func descriptionRedacts() throws {
        let c = try config(["GATEHOUSE_CLIENT_SECRET": "very-secret-value", "GATEHOUSE_SECRET_KEY": aKey])
        #expect(!c.description.contains("very-secret-value"))
        #expect(!c.description.contains(aKey))
        #expect(c.description.contains("clientSecret=set"))
    }
}

@Suite("Configuration values")
struct ConfigurationValueTests {
    @Test("every variable is read")
    func everything() throws {
        let c = try config([
            "GATEHOUSE_ISSUER": "http://127.0.0.1:9400/realms/x/",
            "GATEHOUSE_CLIENT_SECRET": "s", "GATEHOUSE_CLIENT_AUTH_METHOD": "client_secret_post",
            "GATEHOUSE_PUBLIC_URL": "https://App.Example.com:8443/", "GATEHOUSE_LISTEN": "[::]:9090",
            "GATEHOUSE_SCOPES": "profile openid  email profile", "GATEHOUSE_AUTH_PARAMS": "audience=https%3A%2F%2Fapi&connection=git+hub&prompt",
            "GATEHOUSE_ROUTES": "/api=http://127.0.0.1:9000, /b/=https://h/v1",
            "GATEHOUSE_DATABASE": "/var/lib/g.sqlite", "GATEHOUSE_SECRET_KEY": aKey,
            "GATEHOUSE_SECRET_KEY_PREVIOUS": Base64.encode(Array(repeating: 9, count: 32)),
            "GATEHOUSE_PUBLIC_DIR": "/srv/spa", "GATEHOUSE_SESSION_IDLE": "30m", "GATEHOUSE_SESSION_LIFETIME": "14d",
            "GATEHOUSE_COOKIE_NAME": "__Host-sid", "GATEHOUSE_COOKIE_SAMESITE": "lax", "GATEHOUSE_CSRF_HEADER": "X-Requested-By",
            "GATEHOUSE_POST_LOGOUT_REDIRECT_URI": "https://app.example.com:8443/bye", "GATEHOUSE_LOG_LEVEL": "DEBUG",
            "GATEHOUSE_LOG_FORMAT": "Text", "GATEHOUSE_MAX_BODY": "1g", "GATEHOUSE_PROVIDER_TIMEOUT": "5",
            "GATEHOUSE_TRUSTED_PROXIES": "10.0.0.0/8, ::1", "GATEHOUSE_UPSTREAM_TIMEOUT": "2m", "GATEHOUSE_REFRESH_MARGIN": "0",
        ])
        #expect(c.issuer == "http://127.0.0.1:9400/realms/x/")
        #expect(c.discoveryURL == "http://127.0.0.1:9400/realms/x/.well-known/openid-configuration")
        #expect(c.clientAuthMethod == .clientSecretPost)
        #expect(c.publicURL.origin == "https://app.example.com:8443")
        #expect(c.publicURL.scheme == "https")
        #expect(c.publicURL.host == "app.example.com")
        #expect(c.publicURL.port == 8443)
        #expect(c.listen == ListenAddress(host: "::", port: 9090))
        #expect(c.scopes == ["profile", "openid", "email"])
        #expect(c.authParams.map(\.0) == ["audience", "connection", "prompt"])
        #expect(c.authParams.map(\.1) == ["https://api", "git hub", ""])
        #expect(c.routes.map(\.prefix) == ["/api", "/b"])
        #expect(c.databasePath == "/var/lib/g.sqlite")
        #expect(c.secretKey == Array(repeating: 7, count: 32))
        #expect(c.previousSecretKey == Array(repeating: 9, count: 32))
        #expect(c.publicDir == "/srv/spa")
        #expect(c.sessionIdle == 1_800)
        #expect(c.sessionLifetime == 1_209_600)
        #expect(c.cookieName == "__Host-sid")
        #expect(c.cookieSameSite == .lax)
        #expect(c.csrfHeader == "X-Requested-By")
        #expect(c.postLogoutRedirectURI == "https://app.example.com:8443/bye")
        #expect(c.logLevel == .debug)
        #expect(c.logFormat == .text)
        #expect(c.maxBody == 1 << 30)
        #expect(c.providerTimeout == 5)
        #expect(c.trustedProxies.count == 2)
        #expect(c.upstreamTimeout == 120)
        #expect(c.refreshMargin == 0)
    }

    @Test("openid is added first when missing")
    func openidAdded() throws {
        #expect(try config(["GATEHOUSE_SCOPES": "email profile"]).scopes == ["openid", "email", "profile"])
        #expect(try config(["GATEHOUSE_SCOPES": ""]).scopes == ["openid"])
    }

    @Test("secret key accepts base64url without padding")
    func base64url() throws {
        let bytes: [UInt8] = (0..<32).map { UInt8(truncatingIfNeeded: 250 + $0) }
        let urlSafe = Base64.encode(bytes).replacingAll("+", with: "-").replacingAll("/", with: "_").replacingAll("=", with: "")
        #expect(try config(["GATEHOUSE_SECRET_KEY": urlSafe]).secretKey == bytes)
    }

    @Test("loopback issuers may use http", arguments: [
        "http://localhost:9400", "http://127.0.0.1:8080/realms/a", "http://[::1]:9000", "http://127.1.2.3",
    ])
    func loopbackIssuer(issuer: String) throws {
        #expect(try config(["GATEHOUSE_ISSUER": issuer]).issuer == issuer)
    }
}

@Suite("Configuration errors name the variable")
struct ConfigurationErrorTests {
    @Test("missing required variables are all reported")
    func missingRequired() {
        let found = issues([:], requireSecretKey: true)
        #expect(found.contains("GATEHOUSE_ISSUER: is required"))
        #expect(found.contains("GATEHOUSE_CLIENT_ID: is required"))
        #expect(found.contains("GATEHOUSE_SECRET_KEY: is required (generate one with: gatehouse keygen)"))
    }

    @Test("the secret key is only required when asked")
    func secretKeyOptional() {
        #expect(issues(env()).isEmpty)
        #expect(!issues(env(), requireSecretKey: true).isEmpty)
        #expect(issues(env(["GATEHOUSE_SECRET_KEY": aKey]), requireSecretKey: true).isEmpty)
    }

    @Test("the example message of the brief")
    func durationMessage() {
        #expect(issues(env(["GATEHOUSE_SESSION_IDLE": "5x"])) ==
            [#"GATEHOUSE_SESSION_IDLE: "5x" is not a duration (use 90s, 30m, 8h, 14d or seconds)"#])
    }

    @Test("every broken variable is reported at once")
    func collectsAll() {
        let found = issues(env([
            "GATEHOUSE_SESSION_IDLE": "5x", "GATEHOUSE_MAX_BODY": "lots", "GATEHOUSE_LOG_LEVEL": "loud",
            "GATEHOUSE_LOG_FORMAT": "xml", "GATEHOUSE_LISTEN": "8080", "GATEHOUSE_COOKIE_SAMESITE": "None",
        ]))
        let variables = Set(found.map { String($0.prefix { $0 != ":" }) })
        #expect(variables == ["GATEHOUSE_SESSION_IDLE", "GATEHOUSE_MAX_BODY", "GATEHOUSE_LOG_LEVEL",
                              "GATEHOUSE_LOG_FORMAT", "GATEHOUSE_LISTEN", "GATEHOUSE_COOKIE_SAMESITE"])
    }

    @Test("invalid values are refused with their variable", arguments: [
        ("GATEHOUSE_ISSUER", "http://idp.example.com", "must use https"),
        ("GATEHOUSE_ISSUER", "https://idp.example.com?x=1", "must not have a query"),
        ("GATEHOUSE_ISSUER", "https://u:p@idp.example.com", "user information"),
        ("GATEHOUSE_ISSUER", "idp.example.com", "is not an absolute URL"),
        ("GATEHOUSE_CLIENT_AUTH_METHOD", "tls_client_auth", "is not one of"),
        ("GATEHOUSE_CLIENT_AUTH_METHOD", "client_secret_basic", "GATEHOUSE_CLIENT_SECRET is not set"),
        ("GATEHOUSE_CLIENT_AUTH_METHOD", "client_secret_post", "GATEHOUSE_CLIENT_SECRET is not set"),
        ("GATEHOUSE_PUBLIC_URL", "https://app.example.com/app", "without a path"),
        ("GATEHOUSE_PUBLIC_URL", "ftp://app.example.com", "only http and https"),
        ("GATEHOUSE_PUBLIC_URL", "https://app.example.com/?a", "query or fragment"),
        ("GATEHOUSE_LISTEN", "0.0.0.0", "needs a port"),
        ("GATEHOUSE_LISTEN", "0.0.0.0:99999", "invalid port"),
        ("GATEHOUSE_LISTEN", "example.com:80", "needs an IP address"),
        ("GATEHOUSE_SCOPES", "openid e\"mail", "RFC 6749"),
        ("GATEHOUSE_AUTH_PARAMS", "state=abc", "set by Gatehouse itself"),
        ("GATEHOUSE_AUTH_PARAMS", "code_challenge_method=plain", "set by Gatehouse itself"),
        ("GATEHOUSE_AUTH_PARAMS", "scope=x", "GATEHOUSE_SCOPES"),
        ("GATEHOUSE_AUTH_PARAMS", "a=%zz", "malformed percent-encoding"),
        ("GATEHOUSE_AUTH_PARAMS", "=x", "empty parameter name"),
        ("GATEHOUSE_ROUTES", "api=http://x", "must start with /"),
        ("GATEHOUSE_ROUTES", "/api", "is not PREFIX=UPSTREAM_URL"),
        ("GATEHOUSE_ROUTES", "/api=ftp://x", "only http and https"),
        ("GATEHOUSE_ROUTES", "/api=http://x/?q=1", "must not have a query"),
        ("GATEHOUSE_ROUTES", "/api=http://x/#f", "must not have a fragment"),
        ("GATEHOUSE_ROUTES", "/api=http://u@x/", "user information"),
        ("GATEHOUSE_ROUTES", "/api=http://x,/api/=http://y", "more than once"),
        ("GATEHOUSE_ROUTES", "/=http://x", "every path"),
        ("GATEHOUSE_ROUTES", "/login=http://x", "own endpoint /login"),
        ("GATEHOUSE_ROUTES", "/request-object=http://x", "own endpoint /request-object"),
        ("GATEHOUSE_ROUTES", "/a/../b=http://x", "dot segment"),
        ("GATEHOUSE_ROUTES", "/a%2fb=http://x", "unreserved"),
        ("GATEHOUSE_SECRET_KEY", "not base64!", "is not valid base64"),
        ("GATEHOUSE_SECRET_KEY", "AAAA", "decodes to 3 bytes; 32 are required"),
        ("GATEHOUSE_SECRET_KEY_PREVIOUS", "AAAA", "32 are required"),
        ("GATEHOUSE_SESSION_IDLE", "0", "must be greater than 0"),
        ("GATEHOUSE_SESSION_LIFETIME", "-1h", "is not a duration"),
        ("GATEHOUSE_SESSION_LIFETIME", "99999999999999999999d", "is too large"),
        ("GATEHOUSE_COOKIE_NAME", "a b", "not a valid cookie name"),
        ("GATEHOUSE_COOKIE_NAME", "sid=1", "not a valid cookie name"),
        ("GATEHOUSE_COOKIE_NAME", "__Host-sid", "GATEHOUSE_PUBLIC_URL is not https"),
        ("GATEHOUSE_COOKIE_NAME", "__secure-sid", "GATEHOUSE_PUBLIC_URL is not https"),
        ("GATEHOUSE_COOKIE_SAMESITE", "None", "is not Strict or Lax"),
        ("GATEHOUSE_CSRF_HEADER", "X CSRF", "not a valid header name"),
        ("GATEHOUSE_CSRF_HEADER", "Cookie", "standard header"),
        ("GATEHOUSE_POST_LOGOUT_REDIRECT_URI", "/bye", "is not an absolute URL"),
        ("GATEHOUSE_POST_LOGOUT_REDIRECT_URI", "https://x/#f", "fragment"),
        ("GATEHOUSE_LOG_LEVEL", "verbose", "is not one of trace"),
        ("GATEHOUSE_LOG_FORMAT", "xml", "is not json or text"),
        ("GATEHOUSE_MAX_BODY", "10x", "is not a size"),
        ("GATEHOUSE_MAX_BODY", "0", "must be greater than 0"),
        ("GATEHOUSE_MAX_BODY", "99999999999g", "is too large"),
        ("GATEHOUSE_PROVIDER_TIMEOUT", "0s", "must be greater than 0"),
        ("GATEHOUSE_UPSTREAM_TIMEOUT", "soon", "is not a duration"),
        ("GATEHOUSE_REFRESH_MARGIN", "-5", "is not a duration"),
        ("GATEHOUSE_TRUSTED_PROXIES", "10.0.0.0/8, 10.0.0.0/40", "\"10.0.0.0/40\" is not an IP address or CIDR"),
    ])
    func refused(variable: String, value: String, fragment: String) {
        let found = issues(env([variable: value]))
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.hasPrefix(variable + ": ") == true, "\(found)")
        #expect(found.first?.contains(fragment) == true, "\(found)")
    }

    @Test("secret values are never echoed in messages")
    func secretsNotEchoed() {
        let secret = "c2VjcmV0LXRoYXQtaXMtdG9vLXNob3J0"
        let found = issues(env(["GATEHOUSE_SECRET_KEY": secret, "GATEHOUSE_SECRET_KEY_PREVIOUS": secret]))
        #expect(found.count == 2)
        #expect(found.allSatisfy { !$0.contains(secret) })
    }

    @Test("echoed values cannot inject lines")
    func valuesEscaped() {
        let found = issues(env(["GATEHOUSE_LOG_FORMAT": "x\nGATEHOUSE_OK: fine"]))
        #expect(found.count == 1)
        #expect(found.allSatisfy { !$0.contains("\n") })
    }

    @Test("ConfigurationErrors prints one issue a line")
    func errorsDescription() {
        let errors = ConfigurationErrors(issues: [ConfigurationIssue(variable: "A", message: "x"), ConfigurationIssue(variable: "B", message: "y")])
        #expect(errors.description == "A: x\nB: y")
    }
}
