import HTTP1
import Testing
@testable import GatehouseCore

/// `/auth`'s reading of the ingress's subrequest and of its query (SPEC "Behind the ingress you
/// already run"), without sockets.
@Suite("Forward-auth requests and policies")
struct ForwardAuthTests {
    private func request(_ fields: [(String, String)], method: String = "GET") -> ForwardAuthRequest {
        var headers = HTTPHeaders()
        for (name, value) in fields { headers.add(name, value) }
        return ForwardAuthRequest(headers: headers, requestMethod: method)
    }

    @Test("nginx names the original with X-Original-*, Traefik and Caddy with X-Forwarded-*")
    func ingresses() {
        let nginx = request([("X-Original-URI", "/app/x?y=1"), ("X-Original-Method", "PUT")])
        #expect(nginx.ingress == .nginx && nginx.uri == "/app/x?y=1" && nginx.method == "PUT")
        let caddy = request([("X-Forwarded-Uri", "/app/"), ("X-Forwarded-Method", "DELETE")])
        #expect(caddy.ingress == .forwarding && caddy.method == "DELETE" && !caddy.isSafeMethod)
        let direct = request([], method: "POST")
        #expect(direct.ingress == .direct && direct.method == "POST" && direct.uri == nil)
    }

    @Test("a repeated or blank method field is not guessed at: the request's own method stands")
    func repeatedFields() {
        let twice = request([("X-Forwarded-Uri", "/a"), ("X-Forwarded-Method", "GET"), ("X-Forwarded-Method", "POST")],
                            method: "PATCH")
        #expect(twice.method == "PATCH")
        #expect(request([("X-Forwarded-Method", " ")], method: "GET").method == "GET")
    }

    @Test("a navigation is a GET asking for HTML or in navigate mode; only Traefik and Caddy redirect it")
    func navigation() {
        #expect(request([("X-Forwarded-Uri", "/a"), ("Sec-Fetch-Mode", "navigate")]).redirectsToLogin)
        #expect(request([("X-Forwarded-Uri", "/a"), ("Accept", "text/html,application/xhtml+xml")]).redirectsToLogin)
        #expect(!request([("X-Forwarded-Uri", "/a"), ("Accept", "application/json")]).redirectsToLogin)
        #expect(!request([("X-Original-URI", "/a"), ("Sec-Fetch-Mode", "navigate")]).redirectsToLogin)
        #expect(!request([("X-Forwarded-Uri", "/a"), ("X-Forwarded-Method", "POST"), ("Accept", "text/html")]).redirectsToLogin)
        #expect(!request([("Sec-Fetch-Mode", "navigate")]).redirectsToLogin)
    }

    @Test("the login keeps the page as returnTo only when /login would accept it")
    func loginLocation() {
        let origin = "https://app.example.com"
        #expect(request([("X-Forwarded-Uri", "/app/p?q=a b")]).loginLocation(publicOrigin: origin)
                == origin + "/login")  // a space is no URI character: refused as returnTo
        #expect(request([("X-Forwarded-Uri", "/app/p?q=1&r=2")]).loginLocation(publicOrigin: origin)
                == origin + "/login?returnTo=%2Fapp%2Fp%3Fq%3D1%26r%3D2")
        for hostile in ["//evil.example/", "/\\evil", "https://evil.example/", "/%2F%2Fevil"] {
            #expect(request([("X-Forwarded-Uri", hostile)]).loginLocation(publicOrigin: origin) == origin + "/login")
        }
    }

    @Test("the query is a route policy: a session, the identity headers, tokens only when asked")
    func policies() throws {
        let plain = try ForwardAuthPolicy.route(query: nil)
        #expect(plain.auth == .user && plain.identity.sendsIdentityHeaders && !plain.identity.signsAssertion)
        #expect(plain.identity.bearer == RouteIdentity.Bearer.none && plain.allow == nil)
        let full = try ForwardAuthPolicy.route(query: "allow=groups:admin|ops+email_domain:example.com&token=access&identity=assertion&audience=https%3A%2F%2Fapi")
        #expect(full.allow?.description == "groups:admin|ops+email_domain:example.com")
        #expect(full.identity.bearer == .access && full.identity.refusesDPoP)
        #expect(full.identity.sendsIdentityHeaders && full.identity.sendsAssertionHeader)
        #expect(full.identity.audience == "https://api")
        // two policies are two prefixes: what is issued per route never crosses between them
        #expect(plain.prefix != full.prefix)
        #expect(try ForwardAuthPolicy.route(query: "token=access").prefix == (try ForwardAuthPolicy.route(query: "token=access")).prefix)
    }

    @Test("bad queries name what is wrong", arguments: [
        "allow=nope", "identity=cookies", "token=refresh", "frobnicate=1", "token=access&token=none",
        "allow=sub:a;auth=none", "allow=sub:a,b", "audience=x", "allow=%ZZ", "allow=",
    ])
    func badQueries(query: String) {
        #expect(throws: ForwardAuthPolicy.ParseError.self) { try ForwardAuthPolicy.route(query: Substring(query)) }
    }
}

@Suite("CORS origins and the shared cookie domain")
struct CrossOriginPolicyTests {
    @Test("origins are exact: listed ones only, case aside; no wildcard, null, path or plain http")
    func origins() {
        let policy = CORSPolicy(origins: ["https://app.example.com", "http://localhost:5173"])
        #expect(policy.allowedOrigin("https://app.example.com") == "https://app.example.com")
        #expect(policy.allowedOrigin(" HTTPS://APP.example.com ") == "https://app.example.com")
        for other in ["https://app.example.com.evil", "https://evil.app.example.com", "http://app.example.com",
                      "null", "", "https://app.example.com:8443", "*"] {
            #expect(policy.allowedOrigin(Substring(other)) == nil, "\(other)")
        }
        #expect(CORSPolicy.parseOrigin("https://App.Example.com:443/") == .success("https://app.example.com"))
        #expect(CORSPolicy.parseOrigin("*") == .failure(.wildcard))
        #expect(CORSPolicy.parseOrigin("null") == .failure(.null))
        #expect(CORSPolicy.parseOrigin("https://a.example/x") == .failure(.notAnOrigin))
        #expect(CORSPolicy.parseOrigin("https://u@a.example") == .failure(.notAnOrigin))
        #expect(CORSPolicy.parseOrigin("http://a.example") == .failure(.plainHTTP))
        #expect(CORSPolicy.parseOrigin("http://127.0.0.1:3000") == .success("http://127.0.0.1:3000"))
    }

    @Test("a preflight allows the CSRF header, Content-Type and plain requested names, at most 32 more")
    func preflightFields() {
        let many = (0..<40).map { "x-h\($0)" }.joined(separator: ",")
        let fields = CORSPolicy.preflightFields(origin: "https://a.example", methods: "GET", csrfHeader: "X-CSRF",
                                                requestedHeaders: ["x-request-id, bad header, x-csrf", Substring(many)])
        let allowed = fields.first { $0.0 == "Access-Control-Allow-Headers" }!.1.split(separator: ",").map { String($0.trimmingASCIIWhitespace()) }
        #expect(allowed.prefix(3) == ["X-CSRF", "Content-Type", "x-request-id"])
        #expect(!allowed.contains("bad header") && allowed.count == 34)
        #expect(fields.contains { $0 == ("Access-Control-Allow-Credentials", "true") })
        #expect(fields.contains { $0.0 == "Vary" && $0.1.hasPrefix("Origin") })
    }

    @Test("a cookie domain contains the public host and has two labels or more")
    func cookieDomain() {
        #expect(CookieDomain.parse(".Example.com", publicHost: "bff.example.com") == .success("example.com"))
        #expect(CookieDomain.parse("example.com", publicHost: "example.com") == .success("example.com"))
        #expect(CookieDomain.parse("example.com", publicHost: "bff.example.org") == .failure(.notAParentOf("bff.example.org")))
        #expect(CookieDomain.parse("ample.com", publicHost: "bff.example.com") == .failure(.notAParentOf("bff.example.com")))
        #expect(CookieDomain.parse("com", publicHost: "example.com") == .failure(.singleLabel))
        #expect(CookieDomain.parse("10.0.0.1", publicHost: "10.0.0.1") == .failure(.ipAddress))
        #expect(CookieDomain.parse("exa mple.com", publicHost: nil) == .failure(.notADomain))
        #expect(CookieDomain.parse("example..com", publicHost: nil) == .failure(.notADomain))
    }

    @Test("returnTo may be a page of a listed origin, written as the origin serializes")
    func returnTo() {
        let origins = ["https://app.example.com", "http://127.0.0.1:3000"]
        #expect(ReturnTo.validate("https://app.example.com/after?x=1", allowedOrigins: origins) == "https://app.example.com/after?x=1")
        #expect(ReturnTo.validate("https://app.example.com", allowedOrigins: origins) == "https://app.example.com")
        #expect(ReturnTo.validate("http://127.0.0.1:3000/", allowedOrigins: origins) == "http://127.0.0.1:3000/")
        #expect(ReturnTo.validate("/local", allowedOrigins: origins) == "/local")
        for refused in ["https://evil.example/", "https://APP.example.com/", "https://app.example.com:443/",
                        "https://user@app.example.com/", "https://app.example.com//evil.example",
                        "https://app.example.com/%2F%2Fevil.example", "https://app.example.com\\@evil",
                        "http://app.example.com/", "https://app.example.com.evil/"] {
            #expect(ReturnTo.validate(refused, allowedOrigins: origins) == nil, "\(refused)")
        }
        #expect(ReturnTo.validate("https://app.example.com/", allowedOrigins: []) == nil)
    }

    @Test("the configuration: a domain turns the default name __Secure- on https and refuses __Host-")
    func configuration() throws {
        let shared = try loadMinimalConfiguration(["GATEHOUSE_PUBLIC_URL": "https://bff.example.com",
                                                   "GATEHOUSE_COOKIE_DOMAIN": "example.com",
                                                   "GATEHOUSE_CORS_ORIGINS": "https://app.example.com, https://admin.example.com"]).get()
        #expect(shared.cookieName == "__Secure-gatehouse" && shared.cookieDomain == "example.com")
        #expect(shared.cors.origins == ["https://app.example.com", "https://admin.example.com"])
        let plain = try loadMinimalConfiguration(["GATEHOUSE_PUBLIC_URL": "https://bff.example.com"]).get()
        #expect(plain.cookieName == "__Host-Http-gatehouse" && plain.cookieDomain == nil && !plain.cors.isEnabled)
        for (extra, variable) in [
            (["GATEHOUSE_COOKIE_NAME": "__Host-gh"], "GATEHOUSE_COOKIE_NAME"),
            (["GATEHOUSE_COOKIE_NAME": "gh"], "GATEHOUSE_COOKIE_NAME"),
            (["GATEHOUSE_COOKIE_DOMAIN": "example.org"], "GATEHOUSE_COOKIE_DOMAIN"),
            (["GATEHOUSE_CORS_ORIGINS": "https://bff.example.com"], "GATEHOUSE_CORS_ORIGINS"),
            (["GATEHOUSE_CORS_ORIGINS": "*"], "GATEHOUSE_CORS_ORIGINS"),
        ] {
            var environment = ["GATEHOUSE_PUBLIC_URL": "https://bff.example.com", "GATEHOUSE_COOKIE_DOMAIN": "example.com"]
            environment.merge(extra) { $1 }
            guard case .failure(let errors) = loadMinimalConfiguration(environment) else {
                Issue.record("\(extra) was accepted")
                continue
            }
            #expect(errors.issues.contains { $0.variable == variable }, "\(extra): \(errors.issues)")
        }
    }
}

@Suite("Third-party initiated login")
struct ThirdPartyLoginTests {
    private let providers = [(name: "corp", issuer: "https://sso.example.com"), (name: "google", issuer: "https://accounts.google.com")]

    private func resolve(_ iss: String, hint: String? = nil, target: String? = nil,
                         named: String? = nil) -> Result<ThirdPartyLogin, ThirdPartyLogin.Problem> {
        ThirdPartyLogin.resolve(iss: iss, loginHint: hint, targetLinkURI: target, providers: providers, named: named,
                                publicOrigin: "https://app.example.com", corsOrigins: ["https://spa.example.com"])
    }

    @Test("the issuer picks the provider; an unknown one, or another provider named beside it, is refused")
    func issuer() {
        #expect((try? resolve("https://accounts.google.com").get())?.provider == "google")
        #expect(resolve("https://evil.example") == .failure(.unknownIssuer))
        #expect(resolve("https://sso.example.com/") == .failure(.unknownIssuer), "exactly the issuer")
        #expect(resolve("https://sso.example.com", named: "google") == .failure(.otherProvider))
        #expect((try? resolve("https://sso.example.com", hint: "alice@example.com").get())?.loginHint == "alice@example.com")
    }

    @Test("target_link_uri becomes returnTo only when /login would accept it")
    func target() {
        func returnTo(_ target: String) -> String? { (try? resolve("https://sso.example.com", target: target).get())?.returnTo }
        #expect(returnTo("https://app.example.com/reports?q=1") == "/reports?q=1")
        #expect(returnTo("https://app.example.com") == "/")
        #expect(returnTo("/local") == "/local")
        #expect(returnTo("https://spa.example.com/after") == "https://spa.example.com/after")
        for ignored in ["https://evil.example/", "https://app.example.com.evil/", "https://app.example.com//evil",
                        "https://app.example.comx/", "javascript:alert(1)"] {
            #expect(returnTo(ignored) == nil, "\(ignored)")
        }
    }
}
