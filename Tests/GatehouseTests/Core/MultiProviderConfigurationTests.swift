import Testing
@testable import GatehouseCore

/// `GATEHOUSE_PROVIDERS` and the per-provider variables (SPEC "Several providers at once").
@Suite("Configuration: several providers")
struct MultiProviderConfigurationTests {
    /// Google and a company Keycloak, the shared scopes as every provider's default.
    private static let two: [String: String] = [
        "GATEHOUSE_PROVIDERS": "google, corp-sso",
        "GATEHOUSE_IDP_GOOGLE_PROFILE": "google",
        "GATEHOUSE_IDP_GOOGLE_ISSUER": "https://accounts.google.com",
        "GATEHOUSE_IDP_GOOGLE_CLIENT_ID": "g-client",
        "GATEHOUSE_IDP_GOOGLE_CLIENT_SECRET": "g-secret",
        "GATEHOUSE_IDP_CORP_SSO_ISSUER": "https://sso.example.com/realms/corp",
        "GATEHOUSE_IDP_CORP_SSO_CLIENT_ID": "corp-client",
        "GATEHOUSE_IDP_CORP_SSO_DISPLAY_NAME": "Company login",
        "GATEHOUSE_SCOPES": "openid email",
        "GATEHOUSE_PUBLIC_URL": "http://localhost:8080",
    ]

    private func load(_ environment: [String: String]) -> Result<GatehouseConfiguration, ConfigurationErrors> {
        GatehouseConfiguration.load(environment: environment, requireSecretKey: false)
    }

    private func issues(_ environment: [String: String]) -> [ConfigurationIssue] {
        if case .failure(let errors) = load(environment) { return errors.issues }
        return []
    }

    @Test("each provider reads its own prefix, in configured order; unprefixed variables are defaults")
    func perProviderSettings() throws {
        let config = try load(Self.two).get()
        #expect(config.hasNamedProviders)
        #expect(config.providers.map(\.name) == ["google", "corp-sso"])
        let google = config.providers[0], corp = config.providers[1]
        #expect(google.issuer == "https://accounts.google.com")
        #expect(google.clientID == "g-client")
        #expect(google.clientSecret == "g-secret")
        #expect(google.profile.name == .google)
        #expect(google.displayName == "Google")
        #expect(google.authParams.map(\.0) == ["access_type"], "the google profile's default")
        #expect(corp.clientSecret == nil)
        #expect(corp.displayName == "Company login")
        #expect(corp.scopes == ["openid", "email"], "GATEHOUSE_SCOPES is the default of a provider without its own")
        #expect(google.scopes == ["openid", "email"], "a shared default wins over the profile's own default")
        #expect(config.speaking(for: corp).redirectURI == "http://localhost:8080/callback/corp-sso")
        #expect(config.speaking(for: corp).issuer == corp.issuer)
        #expect(config.redirectURI == "http://localhost:8080/callback/google", "the top level speaks for the first")
    }

    @Test("a provider's own variable wins over the default; the name without a profile is the display name")
    func ownValueWins() throws {
        var environment = Self.two
        environment["GATEHOUSE_IDP_CORP_SSO_SCOPES"] = "openid groups"
        environment["GATEHOUSE_IDP_CORP_SSO_DISPLAY_NAME"] = nil
        let config = try load(environment).get()
        #expect(config.providers[1].scopes == ["openid", "groups"])
        #expect(config.providers[0].scopes == ["openid", "email"])
        #expect(config.providers[1].displayName == "corp-sso")
    }

    @Test("without GATEHOUSE_PROVIDERS: one provider named default, /callback, as before")
    func singleProvider() throws {
        let config = try load(["GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa"]).get()
        #expect(!config.hasNamedProviders)
        #expect(config.providers.map(\.name) == ["default"])
        #expect(config.redirectURI == "http://localhost:8080/callback")
        #expect(config.providers[0].discoveryURL == "https://idp.example.com/.well-known/openid-configuration")
    }

    @Test("GATEHOUSE_ISSUER, _CLIENT_ID and _CLIENT_SECRET beside GATEHOUSE_PROVIDERS are refused, each named")
    func sharedIdentityRefused() {
        var environment = Self.two
        environment["GATEHOUSE_ISSUER"] = "https://idp.example.com"
        environment["GATEHOUSE_CLIENT_ID"] = "spa"
        environment["GATEHOUSE_CLIENT_SECRET"] = "s"
        let named = Set(issues(environment).map(\.variable))
        #expect(named == ["GATEHOUSE_ISSUER", "GATEHOUSE_CLIENT_ID", "GATEHOUSE_CLIENT_SECRET"])
    }

    @Test("a provider without an issuer or client id is refused under its own variable names")
    func missingPerProviderValues() {
        var environment = Self.two
        environment["GATEHOUSE_IDP_CORP_SSO_ISSUER"] = nil
        environment["GATEHOUSE_IDP_GOOGLE_CLIENT_ID"] = " "
        let found = issues(environment)
        #expect(found.contains { $0.variable == "GATEHOUSE_IDP_CORP_SSO_ISSUER" && $0.message == "is required" })
        #expect(found.contains { $0.variable == "GATEHOUSE_IDP_GOOGLE_CLIENT_ID" && $0.message == "is required" })
    }

    @Test("a bad value is reported under the variable it came from: the provider's own, or the shared default once")
    func problemsNameTheirVariable() {
        var environment = Self.two
        environment["GATEHOUSE_IDP_GOOGLE_USERINFO"] = "sometimes"
        environment["GATEHOUSE_TOKEN_REQUEST"] = "put"
        let found = issues(environment)
        #expect(found.contains { $0.variable == "GATEHOUSE_IDP_GOOGLE_USERINFO" })
        #expect(found.filter { $0.variable == "GATEHOUSE_TOKEN_REQUEST" }.count == 1, "one problem, shared by both, said once")
    }

    @Test("names: 1–32 of a-z, 0-9 and -, each once, at least one")
    func names() {
        for bad in ["Google", "a_b", String(repeating: "x", count: 33), "a,a", " , "] {
            var environment = Self.two
            environment["GATEHOUSE_PROVIDERS"] = bad
            #expect(issues(environment).contains { $0.variable == "GATEHOUSE_PROVIDERS" }, "\(bad)")
        }
        #expect(ProviderSettings.isValidName(String(repeating: "x", count: 32)))
        #expect(ProviderSettings.variablePrefix(for: "corp-sso") == "GATEHOUSE_IDP_CORP_SSO_")
    }

    @Test("route option providers= names configured providers only; auth=none cannot take it")
    func routeProviders() throws {
        var environment = Self.two
        environment["GATEHOUSE_ROUTES"] = "/corp=http://127.0.0.1:9000;providers=corp-sso,/all=http://127.0.0.1:9001"
        let config = try load(environment).get()
        #expect(config.routes[0].providers == ["corp-sso"])
        #expect(config.routes[1].providers == nil)
        environment["GATEHOUSE_ROUTES"] = "/corp=http://127.0.0.1:9000;providers=corp-sso|github"
        #expect(issues(environment).contains { $0.message.contains("\"github\"") })
        environment["GATEHOUSE_ROUTES"] = "/open=http://127.0.0.1:9000;auth=none;providers=google"
        #expect(issues(environment).contains { $0.variable == "GATEHOUSE_ROUTES" && $0.message.contains("auth=none") })
    }

    @Test("Facebook: its documented discovery URL ends in /, DISCOVERY_URL overrides it, the long-lived token is the default")
    func facebook() throws {
        var environment = Self.two
        environment["GATEHOUSE_PROVIDERS"] = "facebook"
        environment["GATEHOUSE_IDP_FACEBOOK_PROFILE"] = "facebook"
        environment["GATEHOUSE_IDP_FACEBOOK_ISSUER"] = "https://www.facebook.com"
        environment["GATEHOUSE_IDP_FACEBOOK_CLIENT_ID"] = "app"
        environment["GATEHOUSE_IDP_FACEBOOK_CLIENT_SECRET"] = "secret"
        environment["GATEHOUSE_SCOPES"] = nil
        let facebook = try load(environment).get().providers[0]
        #expect(facebook.discoveryURL == "https://www.facebook.com/.well-known/openid-configuration/")
        #expect(facebook.longLivedToken)
        #expect(facebook.displayName == "Facebook")
        environment["GATEHOUSE_IDP_FACEBOOK_DISCOVERY_URL"] = "https://www.facebook.com/.well-known/openid-configuration"
        environment["GATEHOUSE_IDP_FACEBOOK_LONG_LIVED_TOKEN"] = "false"
        let overridden = try load(environment).get().providers[0]
        #expect(overridden.discoveryURL == "https://www.facebook.com/.well-known/openid-configuration")
        #expect(!overridden.longLivedToken)
    }

    @Test("GATEHOUSE_CSP replaces the policy; control characters are refused")
    func contentSecurityPolicy() throws {
        var environment = Self.two
        environment["GATEHOUSE_CSP"] = "default-src 'self'; img-src *"
        #expect(try load(environment).get().contentSecurityPolicy == "default-src 'self'; img-src *")
        environment["GATEHOUSE_CSP"] = "default-src 'self'\u{7}"
        #expect(issues(environment).contains { $0.variable == "GATEHOUSE_CSP" })
    }

    @Test("the providers' own variables are known (no typo warning); a misspelt one is not")
    func unknownVariables() {
        var environment = Self.two
        environment["GATEHOUSE_IDP_CORP_SSO_SCOPE"] = "typo"
        #expect(GatehouseConfiguration.unknownVariables(in: environment) == ["GATEHOUSE_IDP_CORP_SSO_SCOPE"])
    }
}
