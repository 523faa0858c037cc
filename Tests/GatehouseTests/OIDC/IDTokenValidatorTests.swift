import Foundation
import GatehouseOIDC
import JWTKit
import Testing
import TestSupport

/// One claim-set mutation that must fail exactly one check of OIDC Core §3.1.3.7.
struct IDTokenCase: Sendable, CustomTestStringConvertible {
    let name: String
    let mutate: @Sendable (inout [String: JSONValue], Date) -> Void
    let expected: @Sendable (Date) -> IDTokenError

    var testDescription: String { name }
}

@Suite("ID token validation (OIDC Core §3.1.3.7)")
struct IDTokenValidatorTests {
    let provider = TestProvider()
    let clock = ManualClock(unixSeconds: 1_700_000_000)

    private func validator(skew: TimeInterval = 60) -> IDTokenValidator {
        let keys = KeySet(metadata: TestProvider.metadata, http: provider.http(), configuredAlgorithms: ["RS256", "ES256"],
                          now: { [clock] in clock.now() })
        return IDTokenValidator(issuer: TestProvider.issuer, clientID: TestProvider.clientID, keySet: keys, clockSkew: skew)
    }

    @Test("A valid ID token yields its claims, every claim included")
    func valid() async throws {
        let now = clock.now()
        let token = try await provider.signRS256(TestProvider.idTokenClaims(now: now))
        let claims = try await validator().validate(token, expectedNonce: "nonce-123", now: now)
        #expect(claims.sub == "user-42")
        #expect(claims.sid == "session-7")
        #expect(claims.nonce == "nonce-123")
        #expect(claims.issuer == TestProvider.issuer)
        #expect(claims.audiences == [TestProvider.clientID])
        #expect(claims.all["email"] == .string("ada@example.com"))
        #expect(claims.exp == now.addingTimeInterval(300))
    }

    static let failures: [IDTokenCase] = [
        IDTokenCase(name: "iss differs", mutate: { claims, _ in claims["iss"] = .string("https://evil.example") },
                    expected: { _ in .issuerMismatch(expected: TestProvider.issuer, actual: "https://evil.example") }),
        IDTokenCase(name: "iss with trailing slash", mutate: { claims, _ in claims["iss"] = .string(TestProvider.issuer + "/") },
                    expected: { _ in .issuerMismatch(expected: TestProvider.issuer, actual: TestProvider.issuer + "/") }),
        IDTokenCase(name: "iss missing", mutate: { claims, _ in claims["iss"] = nil }, expected: { _ in .missingClaim("iss") }),
        IDTokenCase(name: "aud is another client", mutate: { claims, _ in claims["aud"] = .string("other") },
                    expected: { _ in .audienceMismatch(clientID: TestProvider.clientID, audiences: ["other"]) }),
        IDTokenCase(name: "aud array without the client",
                    mutate: { claims, _ in claims["aud"] = .array([.string("a"), .string("b")]); claims["azp"] = .string(TestProvider.clientID) },
                    expected: { _ in .audienceMismatch(clientID: TestProvider.clientID, audiences: ["a", "b"]) }),
        IDTokenCase(name: "aud missing", mutate: { claims, _ in claims["aud"] = nil }, expected: { _ in .missingClaim("aud") }),
        IDTokenCase(name: "aud is a number", mutate: { claims, _ in claims["aud"] = .number(1) },
                    expected: { _ in .invalidClaim("aud", reason: "is not a string or an array of strings") }),
        IDTokenCase(name: "several audiences without azp",
                    mutate: { claims, _ in claims["aud"] = .array([.string(TestProvider.clientID), .string("api")]) },
                    expected: { _ in .authorizedPartyMissing(audiences: [TestProvider.clientID, "api"]) }),
        IDTokenCase(name: "azp is another client", mutate: { claims, _ in claims["azp"] = .string("other") },
                    expected: { _ in .authorizedPartyMismatch(clientID: TestProvider.clientID, azp: "other") }),
        IDTokenCase(name: "exp past beyond the skew",
                    mutate: { claims, now in claims["exp"] = .number(now.timeIntervalSince1970 - 61) },
                    expected: { now in .expired(exp: now.addingTimeInterval(-61), now: now) }),
        IDTokenCase(name: "exp missing", mutate: { claims, _ in claims["exp"] = nil }, expected: { _ in .missingClaim("exp") }),
        IDTokenCase(name: "exp is a string", mutate: { claims, _ in claims["exp"] = .string("tomorrow") },
                    expected: { _ in .invalidClaim("exp", reason: "is not a NumericDate") }),
        IDTokenCase(name: "iat in the future beyond the skew",
                    mutate: { claims, now in claims["iat"] = .number(now.timeIntervalSince1970 + 61) },
                    expected: { now in .issuedInFuture(iat: now.addingTimeInterval(61), now: now) }),
        IDTokenCase(name: "iat missing", mutate: { claims, _ in claims["iat"] = nil }, expected: { _ in .missingClaim("iat") }),
        IDTokenCase(name: "nbf in the future beyond the skew",
                    mutate: { claims, now in claims["nbf"] = .number(now.timeIntervalSince1970 + 120) },
                    expected: { now in .notYetValid(nbf: now.addingTimeInterval(120), now: now) }),
        IDTokenCase(name: "sub missing", mutate: { claims, _ in claims["sub"] = nil }, expected: { _ in .missingClaim("sub") }),
        IDTokenCase(name: "sub empty", mutate: { claims, _ in claims["sub"] = .string("") }, expected: { _ in .missingClaim("sub") }),
        IDTokenCase(name: "nonce differs", mutate: { claims, _ in claims["nonce"] = .string("nonce-124") },
                    expected: { _ in .nonceMismatch }),
        IDTokenCase(name: "nonce missing", mutate: { claims, _ in claims["nonce"] = nil }, expected: { _ in .missingClaim("nonce") }),
    ]

    @Test("Each check refuses a token crafted to fail only that check", arguments: failures)
    func failsOneCheck(testCase: IDTokenCase) async throws {
        let now = clock.now()
        var claims = TestProvider.idTokenClaims(now: now)
        testCase.mutate(&claims, now)
        let token = try await provider.signES256(claims)
        await #expect(throws: testCase.expected(now)) {
            try await validator().validate(token, expectedNonce: "nonce-123", now: now)
        }
    }

    @Test("Clock skew tolerates exp and iat just within 60 s")
    func skewTolerance() async throws {
        let now = clock.now()
        var claims = TestProvider.idTokenClaims(now: now)
        claims["exp"] = .number(now.timeIntervalSince1970 - 59)
        claims["iat"] = .number(now.timeIntervalSince1970 + 59)
        let token = try await provider.signRS256(claims)
        _ = try await validator().validate(token, expectedNonce: "nonce-123", now: now)
        await #expect(throws: IDTokenError.expired(exp: now.addingTimeInterval(-59), now: now)) {
            try await validator(skew: 0).validate(token, expectedNonce: "nonce-123", now: now)
        }
        #expect(validator(skew: 86_400).clockSkew == 300)
    }

    @Test("Several audiences with azp equal to the client id are accepted")
    func multipleAudiencesWithAzp() async throws {
        let now = clock.now()
        var claims = TestProvider.idTokenClaims(now: now)
        claims["aud"] = .array([.string("api"), .string(TestProvider.clientID)])
        claims["azp"] = .string(TestProvider.clientID)
        let validated = try await validator().validate(provider.signRS256(claims), expectedNonce: "nonce-123", now: now)
        #expect(validated.audiences == ["api", TestProvider.clientID])
    }

    @Test("Signature and algorithm failures are reported as such")
    func signatureFailures() async throws {
        let now = clock.now()
        let claims = TestProvider.idTokenClaims(now: now)
        let unsigned = TestProvider.rawToken(header: ["alg": .string("none")], claims: claims) { _ in [] }
        await #expect(throws: IDTokenError.signature(.forbiddenAlgorithm("none"))) {
            try await validator().validate(unsigned, expectedNonce: "nonce-123", now: now)
        }
        let forged = try await provider.signRS256(claims, key: TestProvider.otherRSAKey)
        await #expect(throws: IDTokenError.signature(.invalidSignature(kid: "rsa-1"))) {
            try await validator().validate(forged, expectedNonce: "nonce-123", now: now)
        }
    }

    @Test("A logout token is not accepted as an ID token")
    func logoutTokenType() async throws {
        let now = clock.now()
        var header = JWTHeader()
        header.typ = "logout+jwt"
        let token = try await provider.signRS256(TestProvider.idTokenClaims(now: now), header: header)
        await #expect(throws: IDTokenError.unexpectedTokenType("logout+jwt")) {
            try await validator().validate(token, expectedNonce: "nonce-123", now: now)
        }
    }

    @Test("A refreshed ID token must name the session's subject (OIDC Core §12.2)")
    func refreshed() async throws {
        let now = clock.now()
        var claims = TestProvider.idTokenClaims(now: now)
        claims["nonce"] = nil
        let token = try await provider.signRS256(claims)
        let original = TestProvider.idTokenClaims(now: now.addingTimeInterval(-600))
        _ = try await validator().validateRefreshed(token, original: original, now: now)
        var otherSubject = original
        otherSubject["sub"] = .string("user-43")
        await #expect(throws: IDTokenError.subjectMismatch) {
            try await validator().validateRefreshed(token, original: otherSubject, now: now)
        }
    }

    @Test("Errors name the claim and never the nonce value")
    func errorDescriptions() {
        #expect(IDTokenError.nonceMismatch.claim == "nonce")
        #expect(IDTokenError.expired(exp: Date(), now: Date()).claim == "exp")
        #expect(!"\(IDTokenError.nonceMismatch)".contains("nonce-123"))
    }
}
