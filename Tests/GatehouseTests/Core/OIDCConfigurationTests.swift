import Testing
@testable import GatehouseCore

/// GATEHOUSE_USERINFO, GATEHOUSE_ID_TOKEN_ALGS and the refused GATEHOUSE_AUTH_PARAMS names.
@Suite("Configuration: OIDC options")
struct OIDCConfigurationTests {
    private func load(_ extra: [String: String]) -> Result<GatehouseConfiguration, ConfigurationErrors> {
        loadMinimalConfiguration(extra)
    }

    private func issues(_ extra: [String: String]) -> [ConfigurationIssue] {
        switch load(extra) {
        case .success: []
        case .failure(let errors): errors.issues
        }
    }

    @Test("Defaults: UserInfo auto, algorithms from the provider")
    func defaults() throws {
        let configuration = try load([:]).get()
        #expect(configuration.userinfo == .auto)
        #expect(configuration.idTokenAlgorithms == nil)
    }

    @Test("GATEHOUSE_USERINFO accepts auto, true, false in any case; refuses anything else")
    func userinfo() throws {
        #expect(try load(["GATEHOUSE_USERINFO": "TRUE"]).get().userinfo == .always)
        #expect(try load(["GATEHOUSE_USERINFO": "false"]).get().userinfo == .never)
        #expect(issues(["GATEHOUSE_USERINFO": "sometimes"]).map(\.variable) == ["GATEHOUSE_USERINFO"])
    }

    @Test("UserInfo auto: only with an endpoint and a scope beyond openid")
    func userinfoAuto() {
        #expect(UserInfoPolicy.auto.applies(endpoint: "https://idp/userinfo", scopes: ["openid", "email"]))
        #expect(!UserInfoPolicy.auto.applies(endpoint: "https://idp/userinfo", scopes: ["openid"]))
        #expect(!UserInfoPolicy.auto.applies(endpoint: nil, scopes: ["openid", "email"]))
        #expect(UserInfoPolicy.always.applies(endpoint: nil, scopes: ["openid"]))
        #expect(!UserInfoPolicy.never.applies(endpoint: "https://idp/userinfo", scopes: ["openid", "email"]))
    }

    @Test("GATEHOUSE_ID_TOKEN_ALGS: asymmetric names, canonical spelling, duplicates dropped")
    func algorithms() throws {
        #expect(try load(["GATEHOUSE_ID_TOKEN_ALGS": "es256, RS256,es256"]).get().idTokenAlgorithms == ["ES256", "RS256"])
        #expect(try load(["GATEHOUSE_ID_TOKEN_ALGS": "eddsa"]).get().idTokenAlgorithms == ["EdDSA"])
    }

    @Test("GATEHOUSE_ID_TOKEN_ALGS refuses none, HMAC, unknown names and an empty list", arguments: [
        "none", "HS256", "RS256,hs512", "RSA-OAEP", " , ",
    ])
    func algorithmsRefused(value: String) {
        let found = issues(["GATEHOUSE_ID_TOKEN_ALGS": value])
        #expect(!found.isEmpty)
        #expect(found.allSatisfy { $0.variable == "GATEHOUSE_ID_TOKEN_ALGS" })
    }

    @Test("GATEHOUSE_AUTH_PARAMS refuses response_mode, request and request_uri (never dropped silently)", arguments: [
        "response_mode=form_post", "request=eyJ", "audience=x&request_uri=urn:x",
    ])
    func unsupportedAuthParams(value: String) {
        let found = issues(["GATEHOUSE_AUTH_PARAMS": value])
        #expect(found.count == 1)
        #expect(found.first?.variable == "GATEHOUSE_AUTH_PARAMS")
    }

    @Test("GATEHOUSE_AUTH_PARAMS refuses every name the gateway sets itself", arguments: [
        "response_type", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge", "code_challenge_method",
    ])
    func reservedAuthParams(name: String) {
        #expect(issues(["GATEHOUSE_AUTH_PARAMS": "\(name)=x"]).map(\.variable) == ["GATEHOUSE_AUTH_PARAMS"])
    }
}

@Suite("Configuration: private_key_jwt")
struct PrivateKeyConfigurationTests {
    private func load(_ extra: [String: String]) -> Result<GatehouseConfiguration, ConfigurationErrors> {
        loadMinimalConfiguration(extra)
    }

    @Test("private_key_jwt needs GATEHOUSE_CLIENT_PRIVATE_KEY, not a secret; the key is never echoed")
    func needsKey() throws {
        guard case .failure(let errors) = load(["GATEHOUSE_CLIENT_AUTH_METHOD": "private_key_jwt"]) else {
            Issue.record("accepted without a key")
            return
        }
        #expect(errors.issues.map(\.variable) == ["GATEHOUSE_CLIENT_PRIVATE_KEY"])
        let pem = "-----BEGIN PRIVATE KEY-----\nMIIsecret\n-----END PRIVATE KEY-----"
        let configuration = try load(["GATEHOUSE_CLIENT_AUTH_METHOD": "private_key_jwt", "GATEHOUSE_CLIENT_PRIVATE_KEY": pem,
                                      "GATEHOUSE_CLIENT_KEY_ID": "k1"]).get()
        #expect(configuration.clientPrivateKeyPEM == pem && configuration.clientKeyID == "k1")
        #expect(!configuration.description.contains("MIIsecret"))
        guard case .failure(let missingFile) = load(["GATEHOUSE_CLIENT_AUTH_METHOD": "private_key_jwt",
                                                     "GATEHOUSE_CLIENT_PRIVATE_KEY": "/nonexistent/key.pem"]) else {
            Issue.record("accepted a missing file")
            return
        }
        #expect(missingFile.issues.map(\.variable) == ["GATEHOUSE_CLIENT_PRIVATE_KEY"])
    }
}
