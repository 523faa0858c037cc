import Testing
@testable import GatehouseCore

/// GATEHOUSE_PROVIDER and the variables its presets default (issue 13).
@Suite("Configuration: provider profiles")
struct ProviderProfileConfigurationTests {
    /// An issuer with Auth0's trailing slash; `extra` wins over it.
    private func load(_ extra: [String: String]) -> Result<GatehouseConfiguration, ConfigurationErrors> {
        let base = ["GATEHOUSE_ISSUER": "https://idp.example.com/", "GATEHOUSE_CLIENT_ID": "spa"]
        return GatehouseConfiguration.load(environment: base.merging(extra) { $1 }, requireSecretKey: false)
    }

    private func issues(_ extra: [String: String]) -> [ConfigurationIssue] {
        guard case .failure(let errors) = load(extra) else { return [] }
        return errors.issues
    }

    @Test("Default: generic, POST, no overrides, no login parameters, no template")
    func defaults() throws {
        let configuration = try load([:]).get()
        #expect(configuration.provider == .named(.generic))
        #expect(configuration.tokenRequest == .post)
        #expect(configuration.endpointOverrides.isEmpty && configuration.loginParams.isEmpty)
        #expect(configuration.requiredClaims.isEmpty && configuration.logoutURL == nil)
        #expect(configuration.scopes == ["openid", "profile", "email", "offline_access"])
    }

    @Test("An unknown profile is refused, listing the known ones")
    func unknownProfile() {
        let found = issues(["GATEHOUSE_PROVIDER": "gitlab"])
        #expect(found.count == 1 && found[0].variable == "GATEHOUSE_PROVIDER" && found[0].message.contains("facebook"))
    }

    @Test("facebook: GET to the Graph API, client_secret_post, no offline_access; each overridable")
    func facebook() throws {
        let configuration = try load(["GATEHOUSE_PROVIDER": "facebook", "GATEHOUSE_CLIENT_SECRET": "s"]).get()
        #expect(configuration.tokenRequest == .get)
        #expect(configuration.clientAuthMethod == .clientSecretPost)
        #expect(configuration.endpointOverrides["GATEHOUSE_TOKEN_ENDPOINT"] == "https://graph.facebook.com/oauth/access_token")
        #expect(!configuration.scopes.contains("offline_access"))
        let overridden = try load(["GATEHOUSE_PROVIDER": "Facebook", "GATEHOUSE_TOKEN_ENDPOINT": "http://127.0.0.1:9/t",
                                   "GATEHOUSE_SCOPES": "openid email"]).get()
        #expect(overridden.endpointOverrides["GATEHOUSE_TOKEN_ENDPOINT"] == "http://127.0.0.1:9/t")
        #expect(overridden.scopes == ["openid", "email"])
        #expect(overridden.clientAuthMethod == .none)
    }

    @Test("google: both issuer forms, access_type=offline, no offline_access scope")
    func google() throws {
        let configuration = try load(["GATEHOUSE_PROVIDER": "google"]).get()
        #expect(configuration.provider.issuerForms == .schemeOptional)
        #expect(configuration.authParams.map(\.0) == ["access_type"])
        #expect(configuration.scopes == ["openid", "profile", "email"])
        #expect(try load(["GATEHOUSE_PROVIDER": "google", "GATEHOUSE_AUTH_PARAMS": "hd=example.com"]).get().authParams.map(\.0) == ["hd"])
    }

    @Test("auth0: /v2/logout from the issuer (trailing slash removed); GATEHOUSE_LOGOUT_URL wins")
    func auth0() throws {
        let configuration = try load(["GATEHOUSE_PROVIDER": "auth0"]).get()
        #expect(configuration.logoutURL == "https://idp.example.com/v2/logout?client_id={client_id}&returnTo={post_logout_redirect_uri}")
        let custom = try load(["GATEHOUSE_PROVIDER": "auth0", "GATEHOUSE_LOGOUT_URL": "https://idp.example.com/bye?c={client_id}"]).get()
        #expect(custom.logoutURL == "https://idp.example.com/bye?c={client_id}")
        #expect(try load(["GATEHOUSE_PROVIDER": "entra"]).get().provider.issuerForms == .tenantTemplate)
    }

    @Test("GATEHOUSE_LOGOUT_URL: unknown placeholders and non-https URLs refused")
    func logoutURL() {
        #expect(issues(["GATEHOUSE_LOGOUT_URL": "https://idp/x?u={user}"]).first?.message.contains("unknown placeholder") == true)
        #expect(issues(["GATEHOUSE_LOGOUT_URL": "http://idp.example.com/logout"]).first?.variable == "GATEHOUSE_LOGOUT_URL")
    }

    @Test("GATEHOUSE_TOKEN_REQUEST=get never puts a client secret in the URL outside the facebook profile")
    func getWithSecret() {
        #expect(issues(["GATEHOUSE_TOKEN_REQUEST": "get", "GATEHOUSE_CLIENT_SECRET": "s",
                        "GATEHOUSE_CLIENT_AUTH_METHOD": "client_secret_post"]).first?.variable == "GATEHOUSE_TOKEN_REQUEST")
        #expect(issues(["GATEHOUSE_TOKEN_REQUEST": "get", "GATEHOUSE_CLIENT_SECRET": "s"]).isEmpty)
        #expect(issues(["GATEHOUSE_TOKEN_REQUEST": "get"]).isEmpty)
        #expect(issues(["GATEHOUSE_TOKEN_REQUEST": "put"]).first?.message.contains("not post or get") == true)
    }

    @Test("Endpoint overrides: https (or loopback http), no fragment")
    func overrides() throws {
        let configuration = try load(["GATEHOUSE_END_SESSION_ENDPOINT": "https://idp.example.com/logout",
                                      "GATEHOUSE_JWKS_URI": "http://localhost:9/jwks"]).get()
        #expect(configuration.endpointOverrides == ["GATEHOUSE_END_SESSION_ENDPOINT": "https://idp.example.com/logout",
                                                    "GATEHOUSE_JWKS_URI": "http://localhost:9/jwks"])
        #expect(issues(["GATEHOUSE_TOKEN_ENDPOINT": "http://idp.example.com/token"]).first?.variable == "GATEHOUSE_TOKEN_ENDPOINT")
        #expect(issues(["GATEHOUSE_USERINFO_ENDPOINT": "https://idp.example.com/u#x"]).first?.variable == "GATEHOUSE_USERINFO_ENDPOINT")
    }

    @Test("GATEHOUSE_LOGIN_PARAMS: names kept once, reserved OAuth names refused")
    func loginParams() throws {
        #expect(try load(["GATEHOUSE_LOGIN_PARAMS": "organization, invitation,login_hint,organization"]).get().loginParams
                == ["organization", "invitation", "login_hint"])
        for reserved in ["state", "nonce", "code_challenge", "redirect_uri", "client_id", "response_type", "scope",
                         "response_mode", "request_uri", "code_verifier", "returnTo"] {
            #expect(issues(["GATEHOUSE_LOGIN_PARAMS": "prompt,\(reserved)"]).first?.variable == "GATEHOUSE_LOGIN_PARAMS")
        }
    }

    @Test("GATEHOUSE_REQUIRE_CLAIMS: name=value pairs; the value may hold '='")
    func requireClaims() throws {
        let pairs = try load(["GATEHOUSE_REQUIRE_CLAIMS": "hd=example.com, email_verified=true,x=a=b"]).get().requiredClaims
        #expect(pairs.map(\.0) == ["hd", "email_verified", "x"] && pairs.map(\.1) == ["example.com", "true", "a=b"])
        #expect(issues(["GATEHOUSE_REQUIRE_CLAIMS": "hd"]).first?.variable == "GATEHOUSE_REQUIRE_CLAIMS")
        #expect(issues(["GATEHOUSE_REQUIRE_CLAIMS": "=x"]).first?.variable == "GATEHOUSE_REQUIRE_CLAIMS")
    }

    @Test("Every new variable is listed for --help")
    func helpListsVariables() {
        let names = Set(GatehouseConfiguration.variables.map(\.name))
        for name in ["GATEHOUSE_PROVIDER", "GATEHOUSE_AUTHORIZATION_ENDPOINT", "GATEHOUSE_TOKEN_ENDPOINT", "GATEHOUSE_JWKS_URI",
                     "GATEHOUSE_USERINFO_ENDPOINT", "GATEHOUSE_END_SESSION_ENDPOINT", "GATEHOUSE_REVOCATION_ENDPOINT",
                     "GATEHOUSE_TOKEN_REQUEST", "GATEHOUSE_LOGIN_PARAMS", "GATEHOUSE_REQUIRE_CLAIMS", "GATEHOUSE_LOGOUT_URL"] {
            #expect(names.contains(name), "\(name)")
        }
    }

    // MARK: Sign in with Apple

    private static let appleKey = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg
        -----END PRIVATE KEY-----
        """

    private func apple(_ extra: [String: String]) -> [String: String] {
        ["GATEHOUSE_PROVIDER": "apple", "GATEHOUSE_APPLE_TEAM_ID": "TEAM123456", "GATEHOUSE_APPLE_KEY_ID": "KEY1234567",
         "GATEHOUSE_CLIENT_PRIVATE_KEY": Self.appleKey].merging(extra) { $1 }
    }

    @Test("apple: Apple's issuer unless set, name and email scopes, form_post, client_secret_post with a signed secret")
    func appleDefaults() throws {
        let environment = apple(["GATEHOUSE_CLIENT_ID": "com.example.web"]).merging(["GATEHOUSE_ISSUER": ""]) { $1 }
        let configuration = try GatehouseConfiguration.load(environment: environment, requireSecretKey: false).get()
        #expect(configuration.issuer == "https://appleid.apple.com")
        #expect(configuration.scopes == ["openid", "name", "email"])
        #expect(configuration.idp.responseMode == .formPost)
        #expect(configuration.clientAuthMethod == .clientSecretPost)
        #expect(configuration.idp.appleTeamID == "TEAM123456" && configuration.idp.appleKeyID == "KEY1234567")
        #expect(configuration.clientSecret == nil && configuration.idp.profile.signsClientSecret)
        #expect(try load(apple(["GATEHOUSE_RESPONSE_MODE": "query"])).get().idp.responseMode == .query)
    }

    @Test("apple: the team id, the key id and the key are required, each named", arguments: [
        "GATEHOUSE_APPLE_TEAM_ID", "GATEHOUSE_APPLE_KEY_ID", "GATEHOUSE_CLIENT_PRIVATE_KEY",
    ])
    func appleRequired(missing: String) {
        var environment = apple([:])
        environment[missing] = nil
        #expect(issues(environment).map(\.variable) == [missing])
    }

    @Test("apple: a configured secret, another auth method or a malformed id is refused; the Apple variables elsewhere too")
    func appleRefusals() {
        #expect(issues(apple(["GATEHOUSE_CLIENT_SECRET": "s"])).map(\.variable) == ["GATEHOUSE_CLIENT_SECRET"])
        #expect(issues(apple(["GATEHOUSE_CLIENT_AUTH_METHOD": "client_secret_basic"])).map(\.variable) == ["GATEHOUSE_CLIENT_AUTH_METHOD"])
        #expect(issues(apple(["GATEHOUSE_APPLE_TEAM_ID": "team"])).map(\.variable) == ["GATEHOUSE_APPLE_TEAM_ID"])
        #expect(issues(["GATEHOUSE_APPLE_TEAM_ID": "TEAM123456"]).map(\.variable) == ["GATEHOUSE_APPLE_TEAM_ID"])
        #expect(issues(["GATEHOUSE_PROVIDER": "google", "GATEHOUSE_APPLE_KEY_ID": "KEY1234567"]).map(\.variable)
                == ["GATEHOUSE_APPLE_KEY_ID"])
    }

    // MARK: GitHub

    @Test("github: github.com and its API unless set, no openid scope, client_secret_post")
    func githubDefaults() throws {
        let environment = ["GATEHOUSE_PROVIDER": "github", "GATEHOUSE_CLIENT_ID": "Iv1.abc", "GATEHOUSE_CLIENT_SECRET": "s"]
        let configuration = try GatehouseConfiguration.load(environment: environment, requireSecretKey: false).get()
        #expect(configuration.issuer == "https://github.com")
        #expect(configuration.scopes == ["read:user", "user:email"])
        #expect(configuration.idp.apiURL == "https://api.github.com")
        #expect(configuration.clientAuthMethod == .clientSecretPost && !configuration.idp.profile.openIDConnect)
        let enterprise = try load(["GATEHOUSE_PROVIDER": "github", "GATEHOUSE_CLIENT_SECRET": "s",
                                   "GATEHOUSE_ISSUER": "https://ghe.example.com", "GATEHOUSE_API_URL": "https://ghe.example.com/api/v3/",
                                   "GATEHOUSE_SCOPES": "read:user user:email read:org"]).get()
        #expect(enterprise.idp.apiURL == "https://ghe.example.com/api/v3" && enterprise.scopes.contains("read:org"))
        #expect(!enterprise.scopes.contains("openid"))
    }

    @Test("GATEHOUSE_API_URL: only with github, and an https URL")
    func apiURL() {
        #expect(issues(["GATEHOUSE_API_URL": "https://api.github.com"]).map(\.variable) == ["GATEHOUSE_API_URL"])
        #expect(issues(["GATEHOUSE_PROVIDER": "github", "GATEHOUSE_CLIENT_SECRET": "s", "GATEHOUSE_API_URL": "http://api.example.com"])
                    .map(\.variable) == ["GATEHOUSE_API_URL"])
    }

    @Test("GATEHOUSE_REQUEST_OBJECT=on needs the client key, and OpenID Connect")
    func requestObject() throws {
        #expect(issues(["GATEHOUSE_REQUEST_OBJECT": "on"]).map(\.variable) == ["GATEHOUSE_REQUEST_OBJECT"])
        #expect(issues(["GATEHOUSE_REQUEST_OBJECT": "sometimes"]).map(\.variable) == ["GATEHOUSE_REQUEST_OBJECT"])
        let on = try load(["GATEHOUSE_REQUEST_OBJECT": "on", "GATEHOUSE_CLIENT_PRIVATE_KEY": Self.appleKey]).get()
        #expect(on.idp.requestObject == .on)
        #expect(issues(["GATEHOUSE_PROVIDER": "github", "GATEHOUSE_CLIENT_SECRET": "s", "GATEHOUSE_REQUEST_OBJECT": "on",
                        "GATEHOUSE_CLIENT_PRIVATE_KEY": Self.appleKey]).map(\.variable) == ["GATEHOUSE_REQUEST_OBJECT"])
    }

    @Test("GATEHOUSE_REQUEST_OBJECT=reference, and the encryption of an object there is")
    func requestObjectByReferenceAndEncrypted() throws {
        #expect(issues(["GATEHOUSE_REQUEST_OBJECT": "reference"]).map(\.variable) == ["GATEHOUSE_REQUEST_OBJECT"])
        let reference = try load(["GATEHOUSE_REQUEST_OBJECT": "reference", "GATEHOUSE_CLIENT_PRIVATE_KEY": Self.appleKey,
                                  "GATEHOUSE_REQUEST_OBJECT_ENCRYPTION": "on"]).get()
        #expect(reference.idp.requestObject == .reference && reference.idp.requestObjectEncryption == .on)
        #expect(try load(["GATEHOUSE_REQUEST_OBJECT": "on", "GATEHOUSE_CLIENT_PRIVATE_KEY": Self.appleKey]).get()
                    .idp.requestObjectEncryption == .off)
        #expect(issues(["GATEHOUSE_REQUEST_OBJECT_ENCRYPTION": "on"]).map(\.variable) == ["GATEHOUSE_REQUEST_OBJECT_ENCRYPTION"])
        #expect(issues(["GATEHOUSE_REQUEST_OBJECT": "on", "GATEHOUSE_CLIENT_PRIVATE_KEY": Self.appleKey,
                        "GATEHOUSE_REQUEST_OBJECT_ENCRYPTION": "RSA1_5"]).map(\.variable) == ["GATEHOUSE_REQUEST_OBJECT_ENCRYPTION"])
    }
}
