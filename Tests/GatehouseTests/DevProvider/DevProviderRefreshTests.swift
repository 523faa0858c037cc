import DevProvider
import Foundation

import Testing

@Suite("Development provider: refresh, revocation and userinfo")
struct DevProviderRefreshTests {
    @Test("Refresh with rotation returns new tokens; the old refresh token is refused afterwards")
    func refreshRotation() async throws {
        let fixture = DevProviderFixture()
        let initial = await fixture.signIn()
        let firstRefresh = try #require(initial["refresh_token"] as? String)
        let refreshed = await fixture.refresh(firstRefresh)
        #expect(refreshed.status == 200)
        let secondRefresh = try #require(refreshed.json["refresh_token"] as? String)
        #expect(secondRefresh != firstRefresh)
        #expect(refreshed.json["access_token"] as? String != initial["access_token"] as? String)
        let idToken = try #require(refreshed.json["id_token"] as? String)
        let claims = try await verifyWithPublishedKeys(idToken, fixture: fixture, as: VerifiedIDToken.self)
        #expect(claims.sub == "alice" && claims.nonce == nil)

        let reused = await fixture.refresh(firstRefresh)
        #expect(reused.status == 400)
        #expect(reused.json["error"] as? String == "invalid_grant")
        #expect(fixture.provider.statistics.refreshTokenGrants == 2)
    }

    @Test("Reusing a rotated refresh token revokes its whole family (RFC 9700 §4.14.2)")
    func reuseRevokesFamily() async throws {
        let fixture = DevProviderFixture()
        let first = try #require(await fixture.signIn()["refresh_token"] as? String)
        let second = try #require(await fixture.refresh(first).json["refresh_token"] as? String)
        #expect(await fixture.refresh(first).json["error"] as? String == "invalid_grant")
        #expect(await fixture.refresh(second).json["error"] as? String == "invalid_grant")
    }

    @Test("Without rotation the same refresh token comes back and keeps working")
    func refreshWithoutRotation() async throws {
        let fixture = DevProviderFixture(rotateRefreshTokens: false)
        let token = try #require(await fixture.signIn()["refresh_token"] as? String)
        #expect(await fixture.refresh(token).json["refresh_token"] as? String == token)
        #expect(await fixture.refresh(token).status == 200)
    }

    @Test("A refresh token of one client is refused to another")
    func refreshBoundToClient() async throws {
        let fixture = DevProviderFixture()
        let token = try #require(await fixture.signIn()["refresh_token"] as? String)
        let response = await fixture.postForm("/token", [("grant_type", "refresh_token"), ("refresh_token", token),
                                                         ("client_id", "spa")])
        #expect(response.json["error"] as? String == "invalid_grant")
    }

    @Test("A refresh may narrow the scope but never widen it (RFC 6749 §6)")
    func refreshScope() async throws {
        let fixture = DevProviderFixture()
        let token = try #require(await fixture.signIn()["refresh_token"] as? String)
        let wider = await fixture.postForm("/token", [("grant_type", "refresh_token"), ("refresh_token", token),
                                                      ("scope", "openid admin")],
                                           headers: [DevProviderFixture.basic("gatehouse", "s3cret")])
        #expect(wider.json["error"] as? String == "invalid_scope")
        let narrower = await fixture.postForm("/token", [("grant_type", "refresh_token"), ("refresh_token", token),
                                                         ("scope", "openid")],
                                              headers: [DevProviderFixture.basic("gatehouse", "s3cret")])
        #expect(narrower.json["scope"] as? String == "openid")
    }

    @Test("setRefreshBehaviour(.refuse) makes every refresh invalid_grant, and the grant is still counted")
    func refusedRefresh() async throws {
        let fixture = DevProviderFixture()
        let token = try #require(await fixture.signIn()["refresh_token"] as? String)
        fixture.provider.setRefreshBehaviour(.refuse)
        #expect(await fixture.refresh(token).json["error"] as? String == "invalid_grant")
        fixture.provider.setRefreshBehaviour(.normal)
        #expect(await fixture.refresh(token).status == 200)
        let statistics = fixture.provider.statistics
        #expect(statistics.refreshTokenGrants == 2 && statistics.failedGrants == 1)
    }

    @Test("setRefreshBehaviour(.delay) holds the refresh answer")
    func delayedRefresh() async throws {
        let fixture = DevProviderFixture()
        let token = try #require(await fixture.signIn()["refresh_token"] as? String)
        fixture.provider.setRefreshBehaviour(.delay(.milliseconds(200)))
        let start = ContinuousClock.now
        #expect(await fixture.refresh(token).status == 200)
        #expect(ContinuousClock.now - start >= .milliseconds(200))
    }

    @Test("Revoking a refresh token also kills its access tokens (RFC 7009 §2.1); unknown tokens get 200")
    func revocation() async throws {
        let fixture = DevProviderFixture()
        let tokens = await fixture.signIn()
        let refresh = try #require(tokens["refresh_token"] as? String)
        let access = try #require(tokens["access_token"] as? String)
        let basic = DevProviderFixture.basic("gatehouse", "s3cret")
        #expect(await fixture.send("GET", "/userinfo", headers: [("Authorization", "Bearer \(access)")]).status == 200)

        let revoked = await fixture.postForm("/revoke", [("token", refresh), ("token_type_hint", "refresh_token")], headers: [basic])
        #expect(revoked.status == 200)
        #expect(await fixture.refresh(refresh).json["error"] as? String == "invalid_grant")
        #expect(await fixture.send("GET", "/userinfo", headers: [("Authorization", "Bearer \(access)")]).status == 401)

        #expect(await fixture.postForm("/revoke", [("token", "unknown")], headers: [basic]).status == 200)
        #expect(fixture.provider.statistics.revocations == 2)
    }

    @Test("Revocation needs client authentication and a token")
    func revocationRequiresClient() async {
        let fixture = DevProviderFixture()
        let unauthenticated = await fixture.postForm("/revoke", [("token", "x")])
        #expect(unauthenticated.status == 401)
        #expect(unauthenticated.json["error"] as? String == "invalid_client")
        let noToken = await fixture.postForm("/revoke", [], headers: [DevProviderFixture.basic("gatehouse", "s3cret")])
        #expect(noToken.json["error"] as? String == "invalid_request")
        #expect(fixture.provider.statistics.revocations == 0)
    }

    @Test("A token of another client is not revoked by a revocation request")
    func revocationByAnotherClient() async throws {
        let fixture = DevProviderFixture()
        let refresh = try #require(await fixture.signIn()["refresh_token"] as? String)
        #expect(await fixture.postForm("/revoke", [("token", refresh), ("client_id", "spa")]).status == 200)
        #expect(await fixture.refresh(refresh).status == 200)
    }

    @Test("Userinfo answers the claims for a valid access token and 401 once it expires")
    func userInfo() async throws {
        let fixture = DevProviderFixture()
        let access = try #require(await fixture.signIn()["access_token"] as? String)
        let response = await fixture.send("GET", "/userinfo", headers: [("Authorization", "Bearer \(access)")])
        #expect(response.status == 200)
        #expect(response.json["sub"] as? String == "alice")
        #expect(response.json["email"] as? String == "alice@example.test")
        #expect(response.json["preferred_username"] as? String == "alice")

        let missing = await fixture.send("GET", "/userinfo")
        #expect(missing.status == 401)
        #expect(missing.headers["WWW-Authenticate"] == #"Bearer realm="devprovider""#)
        let wrong = await fixture.send("GET", "/userinfo", headers: [("Authorization", "Bearer nope")])
        #expect(wrong.headers["WWW-Authenticate"]?.contains(#"error="invalid_token""#) == true)

        fixture.clock.advance(seconds: 300)
        #expect(await fixture.send("GET", "/userinfo", headers: [("Authorization", "Bearer \(access)")]).status == 401)
    }
}
