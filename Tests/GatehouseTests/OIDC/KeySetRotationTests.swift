import Foundation
import GatehouseOIDC
import Testing
import TestSupport

/// The JWKS refetch limit counts only refetches an unknown `kid` caused (SPEC /callback: "refetched
/// once on an unknown `kid`"), and forged back-channel logout tokens cannot use up the refetch a
/// rotation needs for ID tokens (an outside review found that they could: issue #38, item 6).
@Suite("JWKS key set: refetch after rotation (OIDC Core §10.1.1)")
struct KeySetRotationTests {
    let provider = TestProvider()
    let clock = ManualClock(unixSeconds: 1_700_000_000)
    let claims: [String: JSONValue] = ["sub": .string("user-42")]

    private func keySet(_ http: FakeProviderHTTP) -> KeySet {
        KeySet(jwksURI: TestProvider.jwksURI, http: http, allowedAlgorithms: [.rs256, .es256], now: { [clock] in clock.now() })
    }

    private func publish(_ http: FakeProviderHTTP, kid: String, key: TestRSAKey) {
        http.respond(to: TestProvider.jwksURI, json: TestProvider.jwksJSON([TestProvider.rsaJWK(key, kid: kid)]))
    }

    @Test("A rotation one second after start-up: the new kid refetches and verifies")
    func rotationRightAfterStartUp() async throws {
        let http = provider.http()
        let keys = keySet(http)
        try await keys.refresh()
        publish(http, kid: "rsa-2", key: TestProvider.otherRSAKey)
        clock.advance(seconds: 1)
        let token = try await provider.signRS256(claims, kid: "rsa-2", key: TestProvider.otherRSAKey)
        let verified = try await keys.verify(token, from: .unsolicited)
        #expect(verified.keyID == "rsa-2")
        #expect(await keys.fetchCount == 2)
    }

    @Test("Two rotations in a row (the OIDF key-rotation test without waiting): both logins verify")
    func rotationsInARow() async throws {
        let http = provider.http()
        let keys = keySet(http)
        try await keys.refresh()
        publish(http, kid: "rsa-2", key: TestProvider.otherRSAKey)
        _ = try await keys.verify(provider.signRS256(claims, kid: "rsa-2", key: TestProvider.otherRSAKey), from: .unsolicited)
        publish(http, kid: "rsa-3", key: TestProvider.rsaKey)
        clock.advance(seconds: 2)
        _ = try await keys.verify(provider.signRS256(claims, kid: "rsa-3", key: TestProvider.rsaKey), from: .unsolicited)
        #expect(await keys.fetchCount == 3)
    }

    @Test("Random kids cannot make the gateway hammer the provider: one refetch, then none for 30 s")
    func randomKidsAreRateLimited() async throws {
        let http = provider.http()
        let keys = keySet(http)
        try await keys.refresh()
        for index in 0..<10 {
            let forged = try await provider.signRS256(claims, kid: "random-\(index)")
            await #expect(throws: JWSVerificationError.unknownKey(kid: "random-\(index)")) { try await keys.verify(forged, from: .unsolicited) }
            clock.advance(seconds: 1)
        }
        #expect(await keys.fetchCount == 2)
    }

    @Test("A token without kid signed by a newly published key triggers one refetch and verifies")
    func kidlessTokenAfterRotation() async throws {
        let http = provider.http()
        let keys = keySet(http)
        try await keys.refresh()
        publish(http, kid: "rsa-2", key: TestProvider.otherRSAKey)
        clock.advance(seconds: 1)
        let token = try await provider.signRS256(claims, kid: nil, key: TestProvider.otherRSAKey)
        let verified = try await keys.verify(token, from: .unsolicited)
        #expect(verified.algorithm == .rs256)
        #expect(await keys.fetchCount == 2)
        // A forged kid-less token refetches only under the same limit.
        let forged = try await provider.signRS256(claims, kid: nil, key: TestProvider.rsaKey)
        await #expect(throws: JWSVerificationError.invalidSignature(kid: nil)) { try await keys.verify(forged, from: .unsolicited) }
        await #expect(throws: JWSVerificationError.invalidSignature(kid: nil)) { try await keys.verify(forged, from: .unsolicited) }
        #expect(await keys.fetchCount == 3)
    }

    @Test("Forged unsolicited kids do not hide a rotation from the ID tokens the provider returns")
    func forgedLogoutTokensDoNotBlockRotation() async throws {
        let http = provider.http()
        let keys = keySet(http)
        try await keys.refresh()
        // An attacker posts logout tokens with made-up kids: one refetch, then the 30 s limit.
        for index in 0..<5 {
            let forged = try await provider.signRS256(claims, kid: "forged-\(index)")
            await #expect(throws: JWSVerificationError.unknownKey(kid: "forged-\(index)")) {
                try await keys.verify(forged, from: .unsolicited)
            }
        }
        #expect(await keys.fetchCount == 2)
        // The provider rotates a second later: the next login's ID token still verifies at once.
        publish(http, kid: "rsa-2", key: TestProvider.otherRSAKey)
        clock.advance(seconds: 1)
        let idToken = try await provider.signRS256(claims, kid: "rsa-2", key: TestProvider.otherRSAKey)
        #expect(try await keys.verify(idToken, from: .providerResponse).keyID == "rsa-2")
        #expect(await keys.fetchCount == 3)
    }

    @Test("Provider responses refetch at most once per 2 s")
    func providerResponseRefetchesAreBounded() async throws {
        let http = provider.http()
        let keys = keySet(http)
        try await keys.refresh()
        let unknown = try await provider.signRS256(claims, kid: "not-yet")
        for _ in 0..<5 {
            await #expect(throws: JWSVerificationError.unknownKey(kid: "not-yet")) {
                try await keys.verify(unknown, from: .providerResponse)
            }
        }
        #expect(await keys.fetchCount == 2, "one refetch, not one per token")
        clock.advance(seconds: 2)
        await #expect(throws: JWSVerificationError.unknownKey(kid: "not-yet")) {
            try await keys.verify(unknown, from: .providerResponse)
        }
        #expect(await keys.fetchCount == 3)
    }

    @Test("Two rotations in a row seen through ID tokens (the OIDF key-rotation test): both verify at once")
    func providerResponseRotationsInARow() async throws {
        let http = provider.http()
        let keys = keySet(http)
        try await keys.refresh()
        publish(http, kid: "rsa-2", key: TestProvider.otherRSAKey)
        _ = try await keys.verify(provider.signRS256(claims, kid: "rsa-2", key: TestProvider.otherRSAKey), from: .providerResponse)
        publish(http, kid: "rsa-3", key: TestProvider.rsaKey)
        // Well within the 2 s: the last refetch changed the set, so this one may go at once.
        _ = try await keys.verify(provider.signRS256(claims, kid: "rsa-3", key: TestProvider.rsaKey), from: .providerResponse)
        #expect(await keys.fetchCount == 3)
    }
}
