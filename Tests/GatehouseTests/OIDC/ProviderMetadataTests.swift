import Foundation
@testable import GatehouseOIDC
import Testing

@Suite("Provider metadata (OpenID Connect Discovery 1.0)")
struct ProviderMetadataTests {
    static let issuer = "https://idp.example.com"

    static func document(_ overrides: [String: JSONValue] = [:], removing: [String] = []) -> [UInt8] {
        var fields: [String: JSONValue] = [
            "issuer": .string(issuer),
            "authorization_endpoint": .string("https://idp.example.com/authorize"),
            "token_endpoint": .string("https://idp.example.com/token"),
            "jwks_uri": .string("https://idp.example.com/jwks"),
            "end_session_endpoint": .string("https://idp.example.com/logout"),
            "revocation_endpoint": .string("https://idp.example.com/revoke"),
            "code_challenge_methods_supported": .array([.string("plain"), .string("S256")]),
            "id_token_signing_alg_values_supported": .array([.string("RS256")]),
            "authorization_response_iss_parameter_supported": .bool(true),
            "backchannel_logout_supported": .bool(true),
            "token_endpoint_auth_methods_supported": .array([.string("client_secret_post")]),
            "unknown_extension": .object(["x": .number(1)]),
        ]
        for (key, value) in overrides { fields[key] = value }
        for key in removing { fields.removeValue(forKey: key) }
        return Array(try! JSONEncoder().encode(JSONValue.object(fields)))
    }

    @Test("Discovery follows a redirect only within the document's origin (Facebook's trailing slash)")
    func sameOriginRedirects() {
        let url = "https://www.facebook.com/.well-known/openid-configuration"
        #expect(ProviderMetadata.sameOriginTarget("/.well-known/openid-configuration/", of: url)
                == "https://www.facebook.com/.well-known/openid-configuration/")
        #expect(ProviderMetadata.sameOriginTarget("https://www.facebook.com/x", of: url) == "https://www.facebook.com/x")
        #expect(ProviderMetadata.sameOriginTarget("https://evil.example/x", of: url) == nil)
        #expect(ProviderMetadata.sameOriginTarget("//evil.example/x", of: url) == nil)
        #expect(ProviderMetadata.sameOriginTarget("https://www.facebook.com.evil.example/x", of: url) == nil)
        #expect(ProviderMetadata.sameOriginTarget("http://www.facebook.com/x", of: url) == nil)
    }

    @Test("A complete document decodes with every field")
    func decodes() throws {
        let metadata = try ProviderMetadata.decode(Self.document(), expectedIssuer: Self.issuer)
        #expect(metadata.tokenEndpoint == "https://idp.example.com/token")
        #expect(metadata.endSessionEndpoint == "https://idp.example.com/logout")
        #expect(metadata.revocationEndpoint == "https://idp.example.com/revoke")
        #expect(metadata.authorizationResponseIssParameterSupported == true)
        #expect(metadata.backchannelLogoutSupported == true)
        #expect(metadata.idTokenSigningAlgValuesSupported == ["RS256"])
        #expect(metadata.supportsTokenEndpointAuthMethod(.clientSecretPost))
        #expect(!metadata.supportsTokenEndpointAuthMethod(.clientSecretBasic))
    }

    @Test("The issuer must equal the configured one exactly (Discovery §4.3)")
    func issuerMismatch() {
        #expect(throws: DiscoveryError.issuerMismatch(expected: "https://idp.example.com/", actual: Self.issuer)) {
            try ProviderMetadata.decode(Self.document(), expectedIssuer: "https://idp.example.com/")
        }
    }

    @Test("A missing required endpoint is named", arguments: ["authorization_endpoint", "token_endpoint", "jwks_uri", "issuer"])
    func missingField(field: String) {
        // An endpoint the operator can supply names its variable (issue 13); `issuer` cannot be supplied.
        let expected = EndpointOverrides.variable(for: field).map { DiscoveryError.missingEndpoint(field: field, variable: $0) }
            ?? .missingField(field)
        #expect(throws: expected) {
            try ProviderMetadata.decode(Self.document(removing: [field]), expectedIssuer: Self.issuer)
        }
    }

    @Test("Endpoints must be absolute https URLs; http only on loopback", arguments: [
        ("token_endpoint", "http://idp.example.com/token", false),
        ("jwks_uri", "/jwks", false),
        ("authorization_endpoint", "https://idp.example.com/authorize#frag", false),
        ("revocation_endpoint", "ftp://idp.example.com/revoke", false),
        ("token_endpoint", "http://127.0.0.1:9000/token", true),
        ("token_endpoint", "http://localhost:9000/token", true),
        ("token_endpoint", "http://[::1]:9000/token", true),
    ])
    func endpointURLs(field: String, value: String, accepted: Bool) {
        let result = Result { () throws(DiscoveryError) in try ProviderMetadata.decode(Self.document([field: .string(value)]), expectedIssuer: Self.issuer) }
        switch result {
        case .success: #expect(accepted)
        case .failure(let error):
            #expect(!accepted)
            guard case .invalidEndpoint(let name, _, _) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(name == field)
        }
    }

    @Test("S256 must be among code_challenge_methods_supported when the list is present")
    func s256Required() throws {
        #expect(throws: DiscoveryError.s256NotSupported(advertised: ["plain"])) {
            try ProviderMetadata.decode(Self.document(["code_challenge_methods_supported": .array([.string("plain")])]),
                                        expectedIssuer: Self.issuer)
        }
        _ = try ProviderMetadata.decode(Self.document(removing: ["code_challenge_methods_supported"]), expectedIssuer: Self.issuer)
    }

    @Test("Not JSON, or a wrongly typed field, is a malformed document")
    func malformed() {
        #expect(throws: DiscoveryError.self) { try ProviderMetadata.decode(Array("<html>".utf8), expectedIssuer: Self.issuer) }
        let result = Result { () throws(DiscoveryError) in try ProviderMetadata.decode(Self.document(["jwks_uri": .number(3)]), expectedIssuer: Self.issuer) }
        guard case .failure(.malformedDocument) = result else {
            Issue.record("expected malformedDocument, got \(result)")
            return
        }
    }

    @Test("Discovery fetches {issuer}/.well-known/openid-configuration and maps failures")
    func discover() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: "https://idp.example.com/.well-known/openid-configuration",
                     with: ProviderHTTPResponse(status: 200, body: Self.document()))
        let metadata = try await ProviderMetadata.discover(issuer: Self.issuer, http: http)
        #expect(metadata.issuer == Self.issuer)
        #expect(ProviderMetadata.discoveryURL(issuer: "https://idp.example.com/realms/a/")
            == "https://idp.example.com/realms/a/.well-known/openid-configuration")

        await #expect(throws: DiscoveryError.unexpectedStatus(404, url: "https://other.example/.well-known/openid-configuration")) {
            try await ProviderMetadata.discover(issuer: "https://other.example", http: http)
        }
        http.fail("https://idp.example.com/.well-known/openid-configuration", with: .timeout)
        await #expect(throws: DiscoveryError.transport(.timeout)) {
            try await ProviderMetadata.discover(issuer: Self.issuer, http: http)
        }
    }
}

@Suite("Discovery errors tell the operator a value that starts")
struct RequiredFeatureRemedyTests {
    @Test("DPoP names only off (GATEHOUSE_DPOP has no auto); PAR names auto or off")
    func remedies() {
        let dpop = DiscoveryError.requiredFeatureMissing(feature: "DPoP", field: "ES256", variable: "GATEHOUSE_DPOP",
                                                         otherValues: "off")
        #expect(dpop.description.contains("set GATEHOUSE_DPOP=off,"))
        #expect(!dpop.description.contains("GATEHOUSE_DPOP=auto"))
        let par = DiscoveryError.requiredFeatureMissing(feature: "PAR", field: "x", variable: "GATEHOUSE_PAR",
                                                        otherValues: "auto or off")
        #expect(par.description.contains("set GATEHOUSE_PAR=auto or off"))
    }
}
