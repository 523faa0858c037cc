import DevProvider
import Foundation

import JWTKit
import Logging
import Testing

/// A logout token as a relying party reads it.
struct VerifiedLogoutToken: JWTPayload {
    var iss: String
    var aud: String
    var iat: Int
    var exp: Int
    var jti: String
    var events: [String: [String: String]]
    var sub: String?
    var sid: String?
    var nonce: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

@Suite("Development provider: logout")
struct DevProviderLogoutTests {
    @Test("RP-initiated logout ends the provider session and redirects to a registered URI with state")
    func logoutRedirect() async throws {
        let fixture = DevProviderFixture()
        let tokens = await fixture.signIn()
        let idToken = try #require(tokens["id_token"] as? String)
        let query = DevProviderFixture.formEncode([
            ("id_token_hint", idToken), ("post_logout_redirect_uri", "http://127.0.0.1:8080/"),
            ("client_id", "gatehouse"), ("state", "bye"),
        ])
        let response = await fixture.send("GET", "/logout?" + query)
        #expect(response.status == 302)
        #expect(response.headers["Location"] == "http://127.0.0.1:8080/?state=bye")
        #expect(fixture.provider.statistics.sessionsEnded == 1)
        // Tokens of the ended session stop working.
        #expect(await fixture.refresh(tokens["refresh_token"] as? String ?? "").json["error"] as? String == "invalid_grant")
    }

    @Test("An unregistered post_logout_redirect_uri is not followed: a signed-out page instead")
    func logoutUnregisteredRedirect() async throws {
        let fixture = DevProviderFixture()
        let idToken = try #require(await fixture.signIn()["id_token"] as? String)
        let query = DevProviderFixture.formEncode([("id_token_hint", idToken), ("post_logout_redirect_uri", "https://evil.example/")])
        let response = await fixture.send("GET", "/logout?" + query)
        #expect(response.status == 200)
        #expect(response.headers["Location"] == nil)
        #expect(response.text.contains("Signed out"))
    }

    @Test("An id_token_hint this provider did not sign is refused")
    func forgedHint() async throws {
        let fixture = DevProviderFixture()
        let other = DevProviderFixture()
        let foreign = try #require(await other.signIn()["id_token"] as? String)
        let response = await fixture.send("GET", "/logout?" + DevProviderFixture.formEncode([("id_token_hint", foreign)]))
        #expect(response.status == 400)
    }

    @Test("Back-channel logout POSTs a signed logout token to the client and ends the session")
    func backchannelLogout() async throws {
        let fixture = DevProviderFixture()
        let tokens = await fixture.signIn()
        let idToken = try #require(tokens["id_token"] as? String)
        let sid = try await verifyWithPublishedKeys(idToken, fixture: fixture, as: VerifiedIDToken.self).sid

        try await fixture.provider.backchannelLogout(sub: "alice", sid: sid)

        let deliveries = fixture.transport.delivered
        #expect(deliveries.count == 1)
        #expect(deliveries.first?.url == "http://127.0.0.1:8080/backchannel-logout")
        let body = try #require(deliveries.first?.body)
        #expect(body.hasPrefix("logout_token="))
        let token = try #require(URLComponents(string: "?" + body)?.queryItems?.first?.value)
        let claims = try await verifyWithPublishedKeys(token, fixture: fixture, as: VerifiedLogoutToken.self)
        #expect(claims.iss == DevProviderFixture.issuer)
        #expect(claims.aud == "gatehouse")
        #expect(claims.sub == "alice" && claims.sid == sid)
        #expect(claims.nonce == nil)
        #expect(claims.events["http://schemas.openid.net/event/backchannel-logout"] == [:])
        #expect(joseHeader(token)["typ"] as? String == "logout+jwt")
        #expect(fixture.provider.statistics.backchannelLogoutsDelivered == 1)
        #expect(await fixture.refresh(tokens["refresh_token"] as? String ?? "").json["error"] as? String == "invalid_grant")
    }

    @Test("A client that does not answer 2xx makes backchannelLogout throw, naming it")
    func backchannelLogoutFailure() async {
        let transport = CapturingTransport(status: 400)
        let provider = DevProvider(
            configuration: DevProviderConfiguration(issuer: DevProviderFixture.issuer,
                                                    clients: [DevProviderFixture.confidentialClient]),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), transport: transport)
        await #expect(throws: DevProviderError.backchannelLogoutFailed([
            BackchannelLogoutFailure(clientID: "gatehouse", status: 400, reason: "the client answered 400"),
        ])) {
            try await provider.backchannelLogout(sub: "alice", sid: nil)
        }
    }
}

@Suite("Development provider: back-channel delivery over FetchClient")
struct DevProviderFetchTransportTests {
    @Test("An unreachable back-channel logout URI is reported with no status, not a crash")
    func unreachableClient() async {
        let client = DevClient(id: "gatehouse", secret: "s", redirectURIs: [DevProviderFixture.redirectURI],
                               backchannelLogoutURI: "http://127.0.0.1:1/backchannel-logout")
        let provider = DevProvider(
            configuration: DevProviderConfiguration(issuer: DevProviderFixture.issuer, clients: [client]),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        do {
            try await provider.backchannelLogout(sub: "alice", sid: nil)
            Issue.record("delivery to a closed port succeeded")
        } catch let DevProviderError.backchannelLogoutFailed(failures) {
            #expect(failures.map(\.clientID) == ["gatehouse"])
            #expect(failures.first?.status == nil)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}

@Suite("Development provider: loopback only")
struct DevProviderSecurityTests {
    @Test("Loopback hosts", arguments: ["localhost", "LOCALHOST", "127.0.0.1", "127.8.9.10", "::1", "[::1]",
                                        "0:0:0:0:0:0:0:1"])
    func loopback(host: String) {
        #expect(DevProviderSecurity.isLoopback(host: host))
    }

    @Test("Everything else is refused", arguments: ["0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "192.168.1.2",
                                                    "example.com", "localhost.example.com", "127.0.0.1.nip.io",
                                                    "", "[::2]", "::ffff:10.0.0.1", "127.1",
                                                    // IPv4-mapped loopback is refused (`LoopbackHost`).
                                                    "::ffff:127.0.0.1"])
    func notLoopback(host: String) {
        #expect(!DevProviderSecurity.isLoopback(host: host))
    }

    @Test("validate() refuses a non-loopback issuer and unusable clients")
    func validation() {
        let good = DevProviderConfiguration(issuer: "http://127.0.0.1:9400", clients: [DevProviderFixture.confidentialClient])
        #expect(throws: Never.self) { try good.validate() }
        let bad = DevProviderConfiguration(
            issuer: "http://0.0.0.0:9400",
            clients: [DevClient(id: "a", redirectURIs: ["http://127.0.0.1/cb#frag"]), DevClient(id: "a", redirectURIs: [])])
        do {
            try bad.validate()
            Issue.record("validate() accepted a bad configuration")
        } catch {
            guard case .invalidConfiguration(let problems) = error else { Issue.record("wrong error \(error)"); return }
            #expect(problems.count == 4)
        }
    }
}
