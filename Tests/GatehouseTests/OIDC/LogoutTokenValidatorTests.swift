import Foundation
import GatehouseOIDC
import Testing
import TestSupport

struct LogoutTokenCase: Sendable, CustomTestStringConvertible {
    let name: String
    let mutate: @Sendable (inout [String: JSONValue], Date) -> Void
    let expected: @Sendable (Date) -> LogoutTokenError

    var testDescription: String { name }
}

@Suite("Logout token validation (OIDC Back-Channel Logout 1.0 §2.6)")
struct LogoutTokenValidatorTests {
    let provider = TestProvider()
    let clock = ManualClock(unixSeconds: 1_700_000_000)

    private func validator() -> LogoutTokenValidator {
        let keys = KeySet(metadata: TestProvider.metadata, http: provider.http(), configuredAlgorithms: ["RS256", "ES256"],
                          now: { [clock] in clock.now() })
        return LogoutTokenValidator(issuer: TestProvider.issuer, clientID: TestProvider.clientID, keySet: keys)
    }

    @Test("A valid logout token yields iss, sid, sub, jti and iat")
    func valid() async throws {
        let now = clock.now()
        var claims = TestProvider.logoutTokenClaims(now: now)
        claims["sub"] = .string("user-42")
        let logout = try await validator().validate(provider.signRS256(claims), now: now)
        #expect(logout == LogoutTokenClaims(iss: TestProvider.issuer, sub: "user-42", sid: "session-7", jti: "jti-1",
                                            iat: now.addingTimeInterval(-2)))
    }

    @Test("sub alone (no sid) and no exp are accepted")
    func subOnly() async throws {
        let now = clock.now()
        var claims = TestProvider.logoutTokenClaims(now: now)
        claims["sid"] = nil
        claims["exp"] = nil
        claims["sub"] = .string("user-42")
        let logout = try await validator().validate(provider.signES256(claims), now: now)
        #expect(logout.sid == nil && logout.sub == "user-42")
    }

    static let failures: [LogoutTokenCase] = [
        LogoutTokenCase(name: "iss differs", mutate: { claims, _ in claims["iss"] = .string("https://evil.example") },
                        expected: { _ in .issuerMismatch(expected: TestProvider.issuer, actual: "https://evil.example") }),
        LogoutTokenCase(name: "aud is another client", mutate: { claims, _ in claims["aud"] = .string("other") },
                        expected: { _ in .audienceMismatch(clientID: TestProvider.clientID, audiences: ["other"]) }),
        LogoutTokenCase(name: "iat missing", mutate: { claims, _ in claims["iat"] = nil }, expected: { _ in .missingClaim("iat") }),
        LogoutTokenCase(name: "iat older than 5 minutes plus skew",
                        mutate: { claims, now in claims["iat"] = .number(now.timeIntervalSince1970 - 361) },
                        expected: { now in .tooOld(iat: now.addingTimeInterval(-361), now: now) }),
        LogoutTokenCase(name: "iat in the future",
                        mutate: { claims, now in claims["iat"] = .number(now.timeIntervalSince1970 + 61) },
                        expected: { now in .issuedInFuture(iat: now.addingTimeInterval(61), now: now) }),
        LogoutTokenCase(name: "exp past", mutate: { claims, now in claims["exp"] = .number(now.timeIntervalSince1970 - 61) },
                        expected: { now in .expired(exp: now.addingTimeInterval(-61), now: now) }),
        LogoutTokenCase(name: "jti missing", mutate: { claims, _ in claims["jti"] = nil }, expected: { _ in .missingClaim("jti") }),
        LogoutTokenCase(name: "events missing", mutate: { claims, _ in claims["events"] = nil },
                        expected: { _ in .missingClaim("events") }),
        LogoutTokenCase(name: "events is not an object", mutate: { claims, _ in claims["events"] = .array([]) },
                        expected: { _ in .invalidClaim("events", reason: "is not an object") }),
        LogoutTokenCase(name: "events lacks the back-channel logout event",
                        mutate: { claims, _ in claims["events"] = .object(["http://schemas.openid.net/event/other": .object([:])]) },
                        expected: { _ in .missingLogoutEvent }),
        LogoutTokenCase(name: "the event member is not an object",
                        mutate: { claims, _ in claims["events"] = .object([LogoutTokenValidator.backchannelLogoutEvent: .bool(true)]) },
                        expected: { _ in .missingLogoutEvent }),
        LogoutTokenCase(name: "neither sub nor sid", mutate: { claims, _ in claims["sid"] = nil },
                        expected: { _ in .missingSubjectAndSessionID }),
        LogoutTokenCase(name: "nonce present", mutate: { claims, _ in claims["nonce"] = .string("n") },
                        expected: { _ in .nonceForbidden }),
    ]

    @Test("Each check refuses a token crafted to fail only that check", arguments: failures)
    func failsOneCheck(testCase: LogoutTokenCase) async throws {
        let now = clock.now()
        var claims = TestProvider.logoutTokenClaims(now: now)
        testCase.mutate(&claims, now)
        let token = try await provider.signRS256(claims)
        await #expect(throws: testCase.expected(now)) { try await validator().validate(token, now: now) }
    }

    @Test("An unsigned logout token is refused")
    func unsigned() async throws {
        let now = clock.now()
        let token = TestProvider.rawToken(header: ["alg": .string("none")], claims: TestProvider.logoutTokenClaims(now: now)) { _ in [] }
        await #expect(throws: LogoutTokenError.signature(.forbiddenAlgorithm("none"))) {
            try await validator().validate(token, now: now)
        }
    }

    @Test("An ID token is not a logout token")
    func idTokenRefused() async throws {
        let now = clock.now()
        let token = try await provider.signRS256(TestProvider.idTokenClaims(now: now))
        await #expect(throws: LogoutTokenError.self) { try await validator().validate(token, now: now) }
    }
}
