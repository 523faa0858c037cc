import Crypto
import Foundation
import GatehouseEncoding
import Synchronization
import Testing
@testable import GatehouseOIDC

/// Answers in the order given and records what was sent.
final class ScriptedHTTP: ProviderHTTPClient {
    private let state: Mutex<(answers: [ProviderHTTPResponse], sent: [ProviderHTTPRequest])>

    init(_ answers: [ProviderHTTPResponse]) { state = Mutex((answers, [])) }

    var sent: [ProviderHTTPRequest] { state.withLock { $0.sent } }

    func send(_ request: ProviderHTTPRequest) async throws(ProviderTransportError) -> ProviderHTTPResponse {
        state.withLock { state in
            state.sent.append(request)
            return state.answers.isEmpty ? ProviderHTTPResponse(status: 500) : state.answers.removeFirst()
        }
    }
}

@Suite("DPoP (RFC 9449): proofs, the session's key, nonces")
struct DPoPTests {
    private func decode(_ part: Substring) -> [String: JSONValue] {
        guard let bytes = Base64URL.decode(part), case .object(let object)? = try? JSONValue.parse(bytes) else { return [:] }
        return object
    }

    @Test("A proof: typ dpop+jwt, the public key only, htm/htu (no query), ath, nonce; verifiable with its own jwk")
    func proof() throws {
        let key = DPoPKey()
        let proof = key.proof(method: "GET", url: "https://api.example/v1/items?page=2#x", nonce: "n-1",
                              accessToken: "token-abc", now: 1_700_000_000)
        let parts = proof.split(separator: ".")
        #expect(parts.count == 3)
        let header = decode(parts[0]), claims = decode(parts[1])
        #expect(header["typ"] == .string("dpop+jwt") && header["alg"] == .string("ES256"))
        guard case .object(let jwk)? = header["jwk"] else { Issue.record("no jwk"); return }
        #expect(jwk["d"] == nil && jwk == key.publicJWK)
        #expect(claims["htm"] == .string("GET") && claims["htu"] == .string("https://api.example/v1/items"))
        #expect(claims["nonce"] == .string("n-1") && claims["iat"] == .number(1_700_000_000))
        #expect(claims["ath"] == .string(Base64URL.encode(SHA256.hash(data: Array("token-abc".utf8)))))
        guard case .string(let x)? = jwk["x"], case .string(let y)? = jwk["y"] else { return }
        let publicKey = try P256.Signing.PublicKey(rawRepresentation: Base64URL.decode(x)! + Base64URL.decode(y)!)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: Base64URL.decode(parts[2])!)
        #expect(publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
        // Each proof is new.
        #expect(decode(key.proof(method: "GET", url: "https://a", nonce: nil, accessToken: nil, now: 1).split(separator: ".")[1])["jti"]
                != claims["jti"])
    }

    @Test("The key stored with the session comes back as the same key; anything else is no key")
    func storage() {
        let key = DPoPKey()
        let again = DPoPKey(stored: key.stored)
        #expect(again?.thumbprint == key.thumbprint)
        #expect(DPoPKey(stored: "not-a-key") == nil)
        #expect(DPoPKey(stored: Base64URL.encode([UInt8](repeating: 0, count: 32))) == nil)
        #expect(DPoPKey().thumbprint != key.thumbprint)
    }

    @Test("A token request carries a proof, and a use_dpop_nonce answer is retried once with the nonce")
    func nonceRetry() async throws {
        let tokenEndpoint = "https://idp.example/token"
        let http = ScriptedHTTP([
            ProviderHTTPResponse(status: 400, headers: [ProviderHTTPHeader("DPoP-Nonce", "server-nonce-1")],
                                 body: Array(#"{"error":"use_dpop_nonce"}"#.utf8)),
            ProviderHTTPResponse(status: 200, headers: [], body: Array(#"{"access_token":"at","token_type":"DPoP","expires_in":60}"#.utf8)),
        ])
        let client = try TokenClient(tokenEndpoint: tokenEndpoint, revocationEndpoint: nil, clientID: "c", clientSecret: "s",
                                     authMethod: .clientSecretBasic, http: http)
        let key = DPoPKey()
        let response = try await client.refresh(refreshToken: "rt", dpop: key)
        #expect(response.tokenType == "DPoP")
        let sent = http.sent
        #expect(sent.count == 2)
        let proofs = sent.compactMap { $0.headers.first { $0.name == "DPoP" }?.value }
        #expect(proofs.count == 2)
        #expect(decode(proofs[0].split(separator: ".")[1])["nonce"] == nil)
        #expect(decode(proofs[1].split(separator: ".")[1])["nonce"] == .string("server-nonce-1"))
        #expect(decode(proofs[1].split(separator: ".")[1])["htu"] == .string(tokenEndpoint))
        // Remembered for the next request to that server.
        #expect(client.dpopNonces.nonce(for: tokenEndpoint) == "server-nonce-1")
    }

    @Test("Without a key nothing DPoP is sent; a second nonce demand is not chased")
    func noLoops() async throws {
        let askAgain = ProviderHTTPResponse(status: 400, headers: [ProviderHTTPHeader("DPoP-Nonce", "n")],
                                            body: Array(#"{"error":"use_dpop_nonce"}"#.utf8))
        let http = ScriptedHTTP([askAgain, askAgain, askAgain])
        let client = try TokenClient(tokenEndpoint: "https://idp/token", revocationEndpoint: nil, clientID: "c", clientSecret: "s",
                                     authMethod: .clientSecretBasic, http: http)
        await #expect(throws: TokenEndpointError.self) { _ = try await client.refresh(refreshToken: "rt", dpop: DPoPKey()) }
        #expect(http.sent.count == 2)
        let plain = ScriptedHTTP([ProviderHTTPResponse(status: 200, headers: [], body: Array(#"{"access_token":"a","token_type":"Bearer"}"#.utf8))])
        let bearerClient = try TokenClient(tokenEndpoint: "https://idp/token", revocationEndpoint: nil, clientID: "c", clientSecret: "s",
                                           authMethod: .clientSecretBasic, http: plain)
        _ = try await bearerClient.refresh(refreshToken: "rt")
        #expect(plain.sent.first?.headers.contains { $0.name == "DPoP" } == false)
    }

    @Test("asksForNonce reads the authorization server's body and the resource server's challenge")
    func asks() {
        #expect(DPoPKey.asksForNonce(status: 400, body: Array(#"{"error":"use_dpop_nonce"}"#.utf8), wwwAuthenticate: nil))
        #expect(DPoPKey.asksForNonce(status: 401, body: nil, wwwAuthenticate: #"DPoP error="use_dpop_nonce""#))
        #expect(!DPoPKey.asksForNonce(status: 400, body: Array(#"{"error":"invalid_grant"}"#.utf8), wwwAuthenticate: nil))
        #expect(!DPoPKey.asksForNonce(status: 200, body: nil, wwwAuthenticate: nil))
    }
}
