import Crypto
import Foundation
import GatehouseOIDC
import JWTKit
import Testing
import GatehouseEncoding
import TestSupport

@Suite("JWKS key set: key selection, algorithm policy, refetch on unknown kid")
struct KeySetTests {
    let provider = TestProvider()
    let clock = ManualClock(unixSeconds: 1_700_000_000)
    let claims: [String: JSONValue] = ["sub": .string("user-42")]

    private func keySet(_ http: FakeProviderHTTP, allowed: Set<SigningAlgorithm> = [.rs256, .es256]) -> KeySet {
        KeySet(jwksURI: TestProvider.jwksURI, http: http, allowedAlgorithms: allowed, now: { [clock] in clock.now() })
    }

    @Test("RS256 and ES256 tokens verify with the key their kid names")
    func verifiesBothAlgorithms() async throws {
        let keys = keySet(provider.http())
        let rs = try await keys.verify(provider.signRS256(claims), from: .unsolicited)
        #expect(rs.algorithm == .rs256 && rs.keyID == "rsa-1" && rs.claims == claims)
        let es = try await keys.verify(provider.signES256(claims), from: .unsolicited)
        #expect(es.algorithm == .es256 && es.keyID == "ec-1")
        #expect(await keys.fetchCount == 1)
    }

    @Test("A token without kid verifies against the type-compatible keys")
    func noKid() async throws {
        let keys = keySet(provider.http())
        let verified = try await keys.verify(provider.signES256(claims, kid: nil), from: .unsolicited)
        #expect(verified.keyID == nil)
    }

    @Test("alg none is refused before any key is fetched (RFC 8725 §3.1)")
    func algNone() async throws {
        let http = provider.http()
        let keys = keySet(http)
        for alg in ["none", "None", "NONE"] {
            let token = TestProvider.rawToken(header: ["alg": .string(alg), "kid": .string("rsa-1")], claims: claims) { _ in [] }
            await #expect(throws: JWSVerificationError.forbiddenAlgorithm(alg)) { try await keys.verify(token, from: .unsolicited) }
        }
        #expect(http.requests.isEmpty)
    }

    @Test("HS256 keyed with the provider's RSA public key is refused (key confusion)")
    func hmacWithPublicKey() async throws {
        let keys = keySet(provider.http())
        let pem = Array(TestProvider.rsaKey.publicKey.pemRepresentation.utf8)
        let token = TestProvider.rawToken(header: ["alg": .string("HS256"), "kid": .string("rsa-1")], claims: claims) { input in
            Array(HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: pem)))
        }
        await #expect(throws: JWSVerificationError.forbiddenAlgorithm("HS256")) { try await keys.verify(token, from: .unsolicited) }
    }

    @Test("An algorithm outside the provider's allow-list is refused")
    func outsideAllowList() async throws {
        let keys = keySet(provider.http(), allowed: SigningAlgorithm.allowList(configured: nil, advertised: nil))
        #expect(keys.allowedAlgorithms == [.rs256])
        await #expect(throws: JWSVerificationError.algorithmNotAllowed("ES256", allowed: ["RS256"])) {
            try await keys.verify(provider.signES256(claims), from: .unsolicited)
        }
        // Pinned: RS256 by default, plus the provider's algorithm only when it advertises exactly one.
        #expect(SigningAlgorithm.allowList(configured: nil, advertised: ["HS256", "none", "ES256", "PS256"]) == [.rs256])
        #expect(SigningAlgorithm.allowList(configured: nil, advertised: ["ES256"]) == [.rs256, .es256])
        #expect(SigningAlgorithm.allowList(configured: nil, advertised: ["HS256"]) == [.rs256])
        #expect(SigningAlgorithm.allowList(configured: ["PS256"], advertised: ["RS256", "ES256"]) == [.ps256])
    }

    @Test("A signature by another key under a known kid is refused")
    func wrongKey() async throws {
        let keys = keySet(provider.http())
        let forged = try await provider.signRS256(claims, key: TestProvider.otherRSAKey)
        await #expect(throws: JWSVerificationError.invalidSignature(kid: "rsa-1")) { try await keys.verify(forged, from: .unsolicited) }
        let genuine = try await provider.signRS256(claims)
        let tampered = genuine.dropLast(4) + (genuine.hasSuffix("AAAA") ? "BBBB" : "AAAA")
        await #expect(throws: JWSVerificationError.invalidSignature(kid: "rsa-1")) { try await keys.verify(String(tampered), from: .unsolicited) }
    }

    @Test("An unknown kid triggers one refetch; unproductive refetches at most one per 30 s")
    func unknownKidRefetch() async throws {
        let http = provider.http()
        let keys = keySet(http)
        _ = try await keys.verify(provider.signRS256(claims), from: .unsolicited)
        #expect(await keys.fetchCount == 1)

        // The provider rotates: rsa-2 is published after the first fetch.
        http.respond(to: TestProvider.jwksURI, json: TestProvider.jwksJSON([
            TestProvider.rsaJWK(TestProvider.rsaKey, kid: "rsa-1"), TestProvider.rsaJWK(TestProvider.otherRSAKey, kid: "rsa-2"),
        ]))
        let rotated = try await provider.signRS256(claims, kid: "rsa-2", key: TestProvider.otherRSAKey)

        // The first fetch was not caused by an unknown kid: it does not count for the limit.
        clock.advance(seconds: 10)
        _ = try await keys.verify(rotated, from: .unsolicited)
        #expect(await keys.fetchCount == 2)

        // That refetch changed the set (a rotation), so one more unknown kid may refetch at once;
        // this one brings nothing new, so the next waits 30 s.
        let bogus = try await provider.signRS256(claims, kid: "nope")
        clock.advance(seconds: 1)
        await #expect(throws: JWSVerificationError.unknownKey(kid: "nope")) { try await keys.verify(bogus, from: .unsolicited) }
        await #expect(throws: JWSVerificationError.unknownKey(kid: "nope")) { try await keys.verify(bogus, from: .unsolicited) }
        #expect(await keys.fetchCount == 3, "one refetch for the unknown kid, not one per token")
        clock.advance(seconds: 29)
        await #expect(throws: JWSVerificationError.unknownKey(kid: "nope")) { try await keys.verify(bogus, from: .unsolicited) }
        #expect(await keys.fetchCount == 3, "rate-limited: no refetch within 30 s of an unproductive one")
        clock.advance(seconds: 1)
        await #expect(throws: JWSVerificationError.unknownKey(kid: "nope")) { try await keys.verify(bogus, from: .unsolicited) }
        #expect(await keys.fetchCount == 4)
    }

    @Test("The first use fetches once even when the kid is unknown")
    func firstLoadUnknownKid() async throws {
        let keys = keySet(provider.http())
        let token = try await provider.signRS256(claims, kid: "unknown")
        await #expect(throws: JWSVerificationError.unknownKey(kid: "unknown")) { try await keys.verify(token, from: .unsolicited) }
        #expect(await keys.fetchCount == 1)
    }

    @Test("Concurrent verifications share one fetch")
    func concurrentFetch() async throws {
        let keys = keySet(provider.http())
        let token = try await provider.signES256(claims)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { _ = try await keys.verify(token, from: .unsolicited) } }
            try await group.waitForAll()
        }
        #expect(await keys.fetchCount == 1)
    }

    @Test("An unreachable jwks_uri is reported, and retried only after the interval")
    func unavailable() async throws {
        let http = provider.http()
        http.fail(TestProvider.jwksURI, with: .timeout)
        let keys = keySet(http)
        let token = try await provider.signRS256(claims)
        await #expect(throws: JWSVerificationError.keySetUnavailable(.transport(.timeout))) { try await keys.verify(token, from: .unsolicited) }
        await #expect(throws: JWSVerificationError.keySetUnavailable(.transport(.timeout))) { try await keys.verify(token, from: .unsolicited) }
        #expect(await keys.fetchCount == 1)
        http.respond(to: TestProvider.jwksURI, json: provider.jwks())
        clock.advance(seconds: 30)
        _ = try await keys.verify(token, from: .unsolicited)
        #expect(await keys.fetchCount == 2)
    }

    @Test("Encryption, symmetric and unknown keys are skipped; a set of only those is unusable")
    func unusableKeys() async throws {
        var encryptionKey = TestProvider.rsaJWK(TestProvider.rsaKey, kid: "rsa-1", alg: nil)
        encryptionKey["use"] = .string("enc")
        let symmetric: [String: JSONValue] = ["kty": .string("oct"), "kid": .string("rsa-1"), "k": .string("c2VjcmV0")]
        let http = FakeProviderHTTP()
        http.respond(to: TestProvider.jwksURI, json: TestProvider.jwksJSON([encryptionKey, symmetric, ["kty": .string("XYZ")]]))
        let keys = keySet(http)
        await #expect(throws: JWSVerificationError.keySetUnavailable(.noUsableKeys)) {
            try await keys.verify(provider.signRS256(claims), from: .unsolicited)
        }

        http.respond(to: TestProvider.jwksURI, json: TestProvider.jwksJSON([
            encryptionKey, symmetric, TestProvider.rsaJWK(TestProvider.rsaKey, kid: "rsa-1", alg: nil)]))
        try await keys.refresh()
        _ = try await keys.verify(provider.signRS256(claims), from: .unsolicited)
    }

    @Test("A key whose alg differs from the token's is not used")
    func keyAlgMismatch() async throws {
        let http = FakeProviderHTTP()
        http.respond(to: TestProvider.jwksURI, json: TestProvider.jwksJSON([TestProvider.rsaJWK(TestProvider.rsaKey, kid: "rsa-1", alg: "PS256")]))
        let keys = keySet(http, allowed: [.rs256, .ps256])
        await #expect(throws: JWSVerificationError.unknownKey(kid: "rsa-1")) { try await keys.verify(provider.signRS256(claims), from: .unsolicited) }
    }

    @Test("A crit header is refused (RFC 7515 §4.1.11)")
    func critHeader() async throws {
        let keys = keySet(provider.http())
        var header = JWTHeader()
        header.crit = ["exp"]
        await #expect(throws: JWSVerificationError.unsupportedCriticalHeader(["exp"])) {
            try await keys.verify(provider.signRS256(claims, header: header), from: .unsolicited)
        }
    }

    @Test("Malformed tokens are typed errors, never crashes", arguments: [
        "", ".", "..", "a.b", "a.b.c.d.e", "!!!.e30.", "e30.e30.", "eyJhbGciOjF9.e30.", "W10.e30.",
        "eyJhbGciOiJSUzI1NiIsImtpZCI6N30.e30.",
    ])
    func malformed(token: String) async throws {
        let keys = keySet(provider.http())
        do {
            _ = try await keys.verify(token, from: .unsolicited)
            Issue.record("accepted \(token)")
        } catch {
            guard case .malformed = error else {
                Issue.record("unexpected \(error)")
                return
            }
        }
    }

    @Test("A verified token whose payload is not a JSON object is malformed")
    func nonObjectPayload() async throws {
        let keys = keySet(provider.http())
        // "[]" as the payload, correctly signed with the provider's key.
        let signers = JWTKeyCollection()
        await signers.add(ecdsa: provider.ecKey)
        let input = Array((Base64URL.encode(Array(#"{"alg":"ES256","kid":"ec-1"}"#.utf8)) + "." + Base64URL.encode(Array("[]".utf8))).utf8)
        let signature = try await signers.getKey().sign(input)
        let forged = String(decoding: input, as: UTF8.self) + "." + Base64URL.encode(signature)
        await #expect(throws: JWSVerificationError.malformed("the payload is not a JSON object")) { try await keys.verify(forged, from: .unsolicited) }
    }
}

@Suite("JWKS key set: refetch failures")
struct KeySetRefetchFailureTests {
    @Test("A failed refetch for an unknown kid reports the key set as unavailable")
    func failedRefetch() async throws {
        let provider = TestProvider()
        let clock = ManualClock(unixSeconds: 1_700_000_000)
        let http = provider.http()
        let keys = KeySet(jwksURI: TestProvider.jwksURI, http: http, allowedAlgorithms: [.rs256], now: { clock.now() })
        _ = try await keys.verify(provider.signRS256(["sub": .string("a")]), from: .unsolicited)
        http.fail(TestProvider.jwksURI, with: .unreachable("connection refused"))
        clock.advance(seconds: 31)
        await #expect(throws: JWSVerificationError.keySetUnavailable(.transport(.unreachable("connection refused")))) {
            try await keys.verify(provider.signRS256(["sub": .string("a")], kid: "rsa-9"), from: .unsolicited)
        }
        // The keys already known keep working.
        _ = try await keys.verify(provider.signRS256(["sub": .string("a")]), from: .unsolicited)
    }
}
