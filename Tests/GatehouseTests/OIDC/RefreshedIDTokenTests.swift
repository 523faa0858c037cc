import Foundation
import GatehouseOIDC
import Testing
import TestSupport

/// Review issue 10 item 8: an ID token returned by a refresh is validated (OIDC Core §12.2).
@Suite("Refreshed ID token (OIDC Core §12.2)")
struct RefreshedIDTokenTests {
    let provider = TestProvider()
    let clock = ManualClock(unixSeconds: 1_700_000_000)

    private func validator() -> IDTokenValidator {
        let keys = KeySet(metadata: TestProvider.metadata, http: provider.http(), now: { [clock] in clock.now() })
        return IDTokenValidator(issuer: TestProvider.issuer, clientID: TestProvider.clientID, keySet: keys)
    }

    private var original: [String: JSONValue] {
        var claims = TestProvider.idTokenClaims(now: clock.now().addingTimeInterval(-600))
        claims["auth_time"] = .number(clock.now().timeIntervalSince1970 - 610)
        return claims
    }

    @Test("No nonce is needed; the original auth_time is kept")
    func valid() async throws {
        var claims = TestProvider.idTokenClaims(now: clock.now())
        claims["nonce"] = nil
        claims["auth_time"] = original["auth_time"]
        let refreshed = try await validator().validateRefreshed(try await provider.signRS256(claims), original: original,
                                                                now: clock.now())
        #expect(refreshed.sub == "user-42")
    }

    @Test("A changed auth_time, a foreign nonce, another aud or a bad signature is refused")
    func refused() async throws {
        var base = TestProvider.idTokenClaims(now: clock.now())
        base["nonce"] = nil
        var authTime = base
        authTime["auth_time"] = .number(clock.now().timeIntervalSince1970)
        await #expect(throws: IDTokenError.authTimeChanged) {
            try await validator().validateRefreshed(try await provider.signRS256(authTime), original: original, now: clock.now())
        }
        var nonce = base
        nonce["nonce"] = .string("another-nonce")
        await #expect(throws: IDTokenError.nonceMismatch) {
            try await validator().validateRefreshed(try await provider.signRS256(nonce), original: original, now: clock.now())
        }
        var audience = base
        audience["aud"] = .string("someone-else")
        await #expect(throws: IDTokenError.audienceMismatch(clientID: TestProvider.clientID, audiences: ["someone-else"])) {
            try await validator().validateRefreshed(try await provider.signRS256(audience), original: original, now: clock.now())
        }
        let forged = try await provider.signRS256(base, key: TestProvider.otherRSAKey)
        await #expect(throws: IDTokenError.signature(.invalidSignature(kid: "rsa-1"))) {
            try await validator().validateRefreshed(forged, original: original, now: clock.now())
        }
    }
}
