import Foundation
import Testing
import TestSupport

/// `POST /logout`, `GET /logout?sid=` and `POST /backchannel-logout`.
@Suite("Gateway: logout")
struct LogoutTests {
    @Test("POST /logout: 302 to end_session with the hint, cookie expired, refresh token revoked, session gone")
    func postLogout() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            let cookie = try await browser.login().sessionCookie
            let idToken = try #require(harness.tap.issuedTokens.last)
            let response = try await browser.send("POST", "/logout", csrf: true)
            // SPEC logout: "Deletes the session, revokes the refresh token at the provider's
            // revocation_endpoint …, expires the cookie, and answers 302 to the provider's
            // end_session_endpoint with id_token_hint, post_logout_redirect_uri and client_id".
            #expect(response.status == 302)
            let location = try #require(response.location)
            #expect(location.hasPrefix(harness.issuer + "/logout?"))
            #expect(Browser.queryValue("id_token_hint", in: location) == idToken)
            #expect(Browser.queryValue("post_logout_redirect_uri", in: location) == harness.publicURL + "/")
            #expect(Browser.queryValue("client_id", in: location) == GatewayHarness.clientID)
            // A fresh random `state`: some providers redirect back only when one is sent.
            #expect((Browser.queryValue("state", in: location)?.count ?? 0) >= 16)
            let expired = response.setCookies(named: harness.cookieName)
            #expect(expired.count == 1)
            #expect(expired.first.map { LoginTests.attributes(of: $0).contains("max-age=0") } == true)
            // The refresh token and the access token (RFC 7009, token_type_hint=access_token).
            #expect(harness.provider.statistics.revocations == 2)
            #expect(harness.provider.statistics.accessTokenRevocations == 1)
            let user = try await harness.send("GET", "/user", headers: [("X-CSRF", "1"), ("Cookie", "\(harness.cookieName)=\(cookie)")])
            #expect(user.status == 401)
            // The provider accepts the hint and sends the browser back to the registered URI.
            let atProvider = try await RawHTTPClient.send(port: harness.providerPort, method: "GET",
                                                          target: try Browser.target(of: location, expectingPort: harness.providerPort))
            #expect(atProvider.status == 302)
            #expect(atProvider.location?.hasPrefix(harness.publicURL + "/") == true)
        }
    }

    @Test("POST /logout: each end-session redirect carries a state of its own")
    func logoutStateIsFresh() async throws {
        try await GatewayHarness.with { harness in
            var states: [String] = []
            for _ in 0..<2 {
                let browser = harness.browser()
                try await browser.login()
                let response = try await browser.send("POST", "/logout", csrf: true)
                states.append(try #require(response.location.flatMap { Browser.queryValue("state", in: $0) }))
            }
            #expect(states[0] != states[1])
        }
    }

    @Test("POST /logout?everywhere=true with 60 other sessions revokes every session's tokens, not 50")
    func logoutEverywhereRevokesAll() async throws {
        try await GatewayHarness.with { harness in
            let count = 61
            var browsers: [Browser] = []
            for _ in 0..<count {
                let browser = harness.browser()
                try await browser.login()
                browsers.append(browser)
            }
            let before = harness.provider.statistics
            let response = try await browsers[0].send("POST", "/logout?everywhere=true", csrf: true)
            #expect(response.status == 302)
            // A refresh and an access token per session; the answer may come before the last ones.
            #expect(await eventually(timeout: 30) {
                harness.provider.statistics.revocations - before.revocations == 2 * count
            }, "\(harness.provider.statistics.revocations - before.revocations) of \(2 * count)")
            let after = harness.provider.statistics
            // Every session's refresh token (at most 50 other sessions' once), and its access token.
            #expect((after.revocations - after.accessTokenRevocations) - (before.revocations - before.accessTokenRevocations) == count)
            #expect(after.accessTokenRevocations - before.accessTokenRevocations == count)
            #expect(try await browsers[count - 1].get("/user", csrf: true).status == 401)
        }
    }

    @Test("POST /sessions/revoke revokes the ended session's refresh and access tokens")
    func sessionsRevokeRevokesTokens() async throws {
        try await GatewayHarness.with { harness in
            let laptop = harness.browser()
            try await laptop.login()
            let phone = harness.browser()
            try await phone.login()
            let listing = try await laptop.get("/sessions", csrf: true)
            let sessions = try #require(listing.json?["sessions"] as? [[String: Any]])
            let other = try #require(sessions.first { $0["current"] as? Bool == false }?["handle"] as? String)
            let response = try await laptop.send("POST", "/sessions/revoke", csrf: true,
                                                 headers: [("Content-Type", "application/json")],
                                                 body: .bytes(Array("{\"handle\":\"\(other)\"}".utf8)))
            #expect(response.status == 200)
            #expect(harness.provider.statistics.revocations == 2)
            #expect(harness.provider.statistics.accessTokenRevocations == 1)
            #expect(try await phone.get("/user", csrf: true).status == 401)
            #expect(try await laptop.get("/user", csrf: true).status == 200)
        }
    }

    @Test("POST /logout without the CSRF header: 401 and the session stays")
    func postLogoutWithoutCSRF() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            let response = try await browser.send("POST", "/logout")
            #expect(response.status == 401)
            #expect(response.json?["error"] as? String == "csrf_header_missing")
            #expect(try await browser.get("/user", csrf: true).status == 200)
            #expect(harness.provider.statistics.revocations == 0)
        }
    }

    @Test("GET /logout with a wrong sid: 400 and the session stays; with the sid from /user: 302")
    func getLogoutNeedsSid() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            // SPEC logout: "A GET without the right sid is refused with 400 (no cross-site logout)."
            let wrong = try await browser.get("/logout?sid=wrong")
            #expect(wrong.status == 400)
            let missing = try await browser.get("/logout")
            #expect(missing.status == 400)
            #expect(try await browser.get("/user", csrf: true).status == 200)
            let user = try await browser.get("/user", csrf: true)
            let logoutURL = try #require(user.json?["logoutUrl"] as? String)
            let right = try await browser.get(logoutURL)
            #expect(right.status == 302)
            #expect(right.location?.hasPrefix(harness.issuer + "/logout?") == true)
            #expect(try await browser.get("/user", csrf: true).status == 401)
        }
    }

    @Test("back-channel logout from the provider ends the session within a second")
    func backchannelLogout() async throws {
        let clock = ManualClock()
        try await GatewayHarness.with(HarnessOptions(clock: clock)) { harness in
            let browser = harness.browser()
            try await browser.login()
            #expect(try await browser.get("/user", csrf: true).status == 200)
            // SPEC /backchannel-logout: "Deletes the matching sessions; 200 on success".
            try await harness.provider.backchannelLogout(sub: "alice", sid: nil)
            #expect(harness.provider.statistics.backchannelLogoutsDelivered == 1)
            // Past the age of the resolver's cached copy (0.5 s), on the gateway's clock.
            clock.advance(seconds: 1)
            #expect(try await browser.get("/user", csrf: true).status == 401)
            #expect(try await browser.get("/api/echo", csrf: true).status == 401)
        }
    }

    @Test("back-channel logout naming one provider session (sid) ends only that session")
    func backchannelLogoutBySid() async throws {
        let clock = ManualClock()
        try await GatewayHarness.with(HarnessOptions(clock: clock)) { harness in
            let laptop = harness.browser()
            let phone = harness.browser()
            try await laptop.login()
            try await phone.login()
            let laptopUser = try await laptop.get("/user", csrf: true)
            let sid = try #require((laptopUser.json?["claims"] as? [String: Any])?["sid"] as? String)
            let phoneUser = try await phone.get("/user", csrf: true)
            #expect((phoneUser.json?["claims"] as? [String: Any])?["sid"] as? String != sid)
            // SPEC /backchannel-logout: "with … sid and/or sub … Deletes the matching sessions".
            try await harness.provider.backchannelLogout(sub: "alice", sid: sid)
            #expect(harness.provider.statistics.backchannelLogoutsDelivered == 1)
            clock.advance(seconds: 1)  // past the resolver's 0.5 s cache
            #expect(try await laptop.get("/user", csrf: true).status == 401)
            #expect(try await phone.get("/user", csrf: true).status == 200)
        }
    }

    @Test("a replayed logout token is refused with 400; a malformed one too")
    func backchannelReplay() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            try await browser.login()
            try await harness.provider.backchannelLogout(sub: "alice", sid: nil)
            let delivered = try #require(harness.backchannel.bodies.first)
            // SPEC /backchannel-logout: "400 on an invalid token; a replayed jti is refused."
            let replay = try await harness.send("POST", "/backchannel-logout",
                                                headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                                body: .bytes(delivered))
            #expect(replay.status == 400)
            let garbage = try await harness.send("POST", "/backchannel-logout",
                                                 headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                                 body: .bytes(Array("logout_token=eyJhbGciOiJub25lIn0.e30.".utf8)))
            #expect(garbage.status == 400)
        }
    }
}
