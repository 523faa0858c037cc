import Crypto
import Testing
@testable import GatehouseCore

/// `GATEHOUSE_SECURITY_PROFILE=fapi2` (SPEC "FAPI 2.0: PAR and DPoP").
@Suite("Configuration: the FAPI 2.0 security profile")
struct SecurityProfileTests {
    private static let compliant: [String: String] = [
        "GATEHOUSE_SECURITY_PROFILE": "fapi2",
        "GATEHOUSE_ISSUER": "https://bank.example.com",
        "GATEHOUSE_CLIENT_ID": "client",
        "GATEHOUSE_CLIENT_AUTH_METHOD": "private_key_jwt",
        "GATEHOUSE_CLIENT_PRIVATE_KEY": P256.Signing.PrivateKey().pemRepresentation,
        "GATEHOUSE_DPOP": "on",
        "GATEHOUSE_ID_TOKEN_ALGS": "PS256,ES256",
        "GATEHOUSE_PUBLIC_URL": "https://app.example.com",
    ]

    private func issues(_ environment: [String: String]) -> [ConfigurationIssue] {
        if case .failure(let errors) = GatehouseConfiguration.load(environment: environment, requireSecretKey: false) {
            return errors.issues
        }
        return []
    }

    @Test("A compliant configuration loads, with PAR required (auto taken as on)")
    func compliant() throws {
        let config = try GatehouseConfiguration.load(environment: Self.compliant, requireSecretKey: false).get()
        #expect(config.securityProfile == .fapi2)
        #expect(config.idp.pushedAuthorization == .on)
        #expect(config.idp.dpop == .on)
        // Loopback http is allowed for development.
        var local = Self.compliant
        local["GATEHOUSE_ISSUER"] = "http://127.0.0.1:9000"
        local["GATEHOUSE_PUBLIC_URL"] = "http://localhost:8080"
        #expect(issues(local).isEmpty)
    }

    @Test("Each thing FAPI 2.0 forbids is refused, naming its variable", arguments: [
        ("GATEHOUSE_CLIENT_AUTH_METHOD", "client_secret_basic", "GATEHOUSE_CLIENT_AUTH_METHOD"),
        ("GATEHOUSE_PAR", "off", "GATEHOUSE_PAR"),
        ("GATEHOUSE_DPOP", "off", "GATEHOUSE_DPOP"),
        ("GATEHOUSE_CLIENT_KEY_ALG", "RS256", "GATEHOUSE_CLIENT_KEY_ALG"),
        ("GATEHOUSE_ID_TOKEN_ALGS", "RS256,ES256", "GATEHOUSE_ID_TOKEN_ALGS"),
        ("GATEHOUSE_ISSUER", "http://bank.example.com", "GATEHOUSE_ISSUER"),
        ("GATEHOUSE_PUBLIC_URL", "http://app.example.com", "GATEHOUSE_PUBLIC_URL"),
    ])
    func refusals(variable: String, value: String, named: String) {
        var environment = Self.compliant
        environment[variable] = value
        if variable == "GATEHOUSE_CLIENT_AUTH_METHOD" {
            environment["GATEHOUSE_CLIENT_SECRET"] = "s"
            environment["GATEHOUSE_CLIENT_PRIVATE_KEY"] = nil
        }
        let found = issues(environment)
        // (A plain-http issuer outside loopback is refused with or without the profile.)
        #expect(found.contains { $0.variable == named && ($0.message.contains("fapi2") || named == "GATEHOUSE_ISSUER") }, "\(found)")
    }

    @Test("Left unset, the ID-token algorithms are the profile's (no RS256); without the profile the usual default")
    func defaults() throws {
        var environment = Self.compliant
        environment["GATEHOUSE_ID_TOKEN_ALGS"] = nil
        #expect(issues(environment).isEmpty)
        let profiled = try GatehouseConfiguration.load(environment: environment, requireSecretKey: false).get()
        #expect(profiled.idp.idTokenAlgorithms == ["PS256", "ES256", "EdDSA"])
        var plain = environment
        plain["GATEHOUSE_SECURITY_PROFILE"] = nil
        plain["GATEHOUSE_DPOP"] = "off"
        #expect(issues(plain).isEmpty)
        #expect(try GatehouseConfiguration.load(environment: plain, requireSecretKey: false).get().idp.idTokenAlgorithms == nil)
        environment["GATEHOUSE_SECURITY_PROFILE"] = "fapi1"
        #expect(issues(environment).contains { $0.variable == "GATEHOUSE_SECURITY_PROFILE" })
    }

    @Test("GATEHOUSE_CLIENT_KEY_ALG: auto unless set, any case; an unknown name is refused")
    func clientKeyAlgorithm() throws {
        #expect(try GatehouseConfiguration.load(environment: Self.compliant, requireSecretKey: false).get().idp.clientKeyAlgorithm == .auto)
        var environment = Self.compliant
        environment["GATEHOUSE_CLIENT_KEY_ALG"] = "ps256"
        #expect(try GatehouseConfiguration.load(environment: environment, requireSecretKey: false).get().idp.clientKeyAlgorithm == .ps256)
        environment["GATEHOUSE_CLIENT_KEY_ALG"] = "HS256"
        #expect(issues(environment).contains { $0.variable == "GATEHOUSE_CLIENT_KEY_ALG" && $0.message.contains("PS256") })
    }

    @Test("With several providers each one's own variable is named")
    func perProvider() {
        let environment: [String: String] = [
            "GATEHOUSE_SECURITY_PROFILE": "fapi2", "GATEHOUSE_PROVIDERS": "bank",
            "GATEHOUSE_IDP_BANK_ISSUER": "https://bank.example.com", "GATEHOUSE_IDP_BANK_CLIENT_ID": "c",
            "GATEHOUSE_IDP_BANK_CLIENT_SECRET": "s", "GATEHOUSE_PUBLIC_URL": "https://app.example.com",
            "GATEHOUSE_IDP_BANK_ID_TOKEN_ALGS": "RS256",
        ]
        let names = Set(issues(environment).map(\.variable))
        #expect(names.isSuperset(of: ["GATEHOUSE_IDP_BANK_CLIENT_AUTH_METHOD", "GATEHOUSE_IDP_BANK_DPOP",
                                      "GATEHOUSE_IDP_BANK_ID_TOKEN_ALGS"]), "\(names)")
    }
}
