import Foundation
import GatehouseOIDC
import Testing
import TestSupport

/// Review issue 10 item 9: the JWKS refetch limit counts only refetches an unknown `kid` caused
/// (SPEC /callback: "refetched once on an unknown `kid`").
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
        let verified = try await keys.verify(token)
        #expect(verified.keyID == "rsa-2")
        #expect(await keys.fetchCount == 2)
    }

    @Test("Two rotations in a row (the OIDF key-rotation test without waiting): both logins verify")
    func rotationsInARow() async throws {
        let http = provider.http()
        let keys = keySet(http)
        try await keys.refresh()
        publish(http, kid: "rsa-2", key: TestProvider.otherRSAKey)
        _ = try await keys.verify(provider.signRS256(claims, kid: "rsa-2", key: TestProvider.otherRSAKey))
        publish(http, kid: "rsa-3", key: TestProvider.rsaKey)
        clock.advance(seconds: 2)
        _ = try await keys.verify(provider.signRS256(claims, kid: "rsa-3", key: TestProvider.rsaKey))
        #expect(await keys.fetchCount == 3)
    }

    @Test("Random kids cannot make the gateway hammer the provider: one refetch, then none for 30 s")
    func randomKidsAreRateLimited() async throws {
        let http = provider.http()
        let keys = keySet(http)
        try await keys.refresh()
        for index in 0..<10 {
            let forged = try await provider.signRS256(claims, kid: "random-\(index)")
            await #expect(throws: JWSVerificationError.unknownKey(kid: "random-\(index)")) { try await keys.verify(forged) }
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
        let verified = try await keys.verify(token)
        #expect(verified.algorithm == .rs256)
        #expect(await keys.fetchCount == 2)
        // A forged kid-less token refetches only under the same limit.
        let forged = try await provider.signRS256(claims, kid: nil, key: TestProvider.rsaKey)
        await #expect(throws: JWSVerificationError.invalidSignature(kid: nil)) { try await keys.verify(forged) }
        await #expect(throws: JWSVerificationError.invalidSignature(kid: nil)) { try await keys.verify(forged) }
        #expect(await keys.fetchCount == 3)
    }
}
