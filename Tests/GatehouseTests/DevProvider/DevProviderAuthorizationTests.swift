import DevProvider
import Foundation
import EventLoops
import HTTP1
import Testing

@Suite("Development provider: discovery and authorization endpoint")
struct DevProviderAuthorizationTests {
    @Test("Discovery names every endpoint under the issuer and advertises S256, iss and back-channel logout")
    func discoveryDocument() async throws {
        let fixture = DevProviderFixture(issuer: "http://127.0.0.1:9400/realms/dev")
        let response = await fixture.send("GET", "/realms/dev/.well-known/openid-configuration")
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "application/json")
        let json = response.json
        #expect(json["issuer"] as? String == "http://127.0.0.1:9400/realms/dev")
        #expect(json["authorization_endpoint"] as? String == "http://127.0.0.1:9400/realms/dev/authorize")
        #expect(json["token_endpoint"] as? String == "http://127.0.0.1:9400/realms/dev/token")
        #expect(json["jwks_uri"] as? String == "http://127.0.0.1:9400/realms/dev/jwks")
        #expect(json["end_session_endpoint"] as? String == "http://127.0.0.1:9400/realms/dev/logout")
        #expect(json["revocation_endpoint"] as? String == "http://127.0.0.1:9400/realms/dev/revoke")
        #expect(json["userinfo_endpoint"] as? String == "http://127.0.0.1:9400/realms/dev/userinfo")
        #expect(json["code_challenge_methods_supported"] as? [String] == ["S256"])
        #expect(json["id_token_signing_alg_values_supported"] as? [String] == ["ES256"])
        #expect(json["authorization_response_iss_parameter_supported"] as? Bool == true)
        #expect(json["backchannel_logout_supported"] as? Bool == true)
        #expect(json["backchannel_logout_session_supported"] as? Bool == true)
        #expect(json["token_endpoint_auth_methods_supported"] as? [String] == ["client_secret_basic", "client_secret_post", "none"])
        // The same document leaves without a task through immediateResponse.
        let immediate = fixture.provider.immediateResponse(
            to: HTTPRequestHead(method: "GET", target: "/realms/dev/.well-known/openid-configuration"),
            peer: PeerAddress(ip: "127.0.0.1", port: 1))
        #expect(immediate == response)
        // Paths outside the issuer are unknown.
        #expect(await fixture.send("GET", "/.well-known/openid-configuration").status == 404)
    }

    @Test("JWKS publishes one P-256 key with kid, alg ES256 and use sig")
    func jwks() async throws {
        let json = await DevProviderFixture().send("GET", "/jwks").json
        let keys = try #require(json["keys"] as? [[String: Any]])
        #expect(keys.count == 1)
        #expect(keys[0]["kty"] as? String == "EC")
        #expect(keys[0]["crv"] as? String == "P-256")
        #expect(keys[0]["alg"] as? String == "ES256")
        #expect(keys[0]["use"] as? String == "sig")
        #expect((keys[0]["kid"] as? String)?.count == 43)
        #expect((keys[0]["x"] as? String)?.count == 43)
        #expect((keys[0]["y"] as? String)?.count == 43)
        #expect(keys[0]["d"] == nil)
    }

    @Test("GET /authorize shows the sign-in form carrying the request in hidden fields")
    func signInForm() async {
        let fixture = DevProviderFixture()
        let query = DevProviderFixture.formEncode(DevProviderFixture.authorizationParameters())
        let response = await fixture.send("GET", "/authorize?" + query)
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(response.headers["Cache-Control"] == "no-store")
        #expect(response.headers["Content-Security-Policy"]?.contains("default-src 'none'") == true)
        let page = response.text
        #expect(page.contains(#"id="username""#) && page.contains(#"name="username""#))
        #expect(page.contains(#"type="submit" id="submit""#))
        #expect(page.contains(#"id="deny""#))
        #expect(page.contains(#"<input type="hidden" name="code_challenge" value="\#(DevProviderFixture.challenge)">"#))
        #expect(page.contains(#"<input type="hidden" name="state" value="state-123">"#))
        #expect(page.contains(#"action="/authorize""#))
        #expect(page.contains("not for production"))
    }

    @Test("A hostile state is HTML-escaped in the form, never markup")
    func hostileStateIsEscaped() async {
        let fixture = DevProviderFixture()
        let hostile = #""><script>alert(1)</script><input x='"#
        let query = DevProviderFixture.formEncode(DevProviderFixture.authorizationParameters(state: hostile))
        let page = await fixture.send("GET", "/authorize?" + query).text
        #expect(!page.contains("<script>"))
        #expect(page.contains(#"value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;input x=&#39;""#))
    }

    @Test("A redirect_uri that is not registered exactly gets an error page, never a redirect (RFC 6749 §4.1.2.1)")
    func redirectURIMismatchIsNotRedirected() async {
        let fixture = DevProviderFixture()
        for uri in ["http://127.0.0.1:8080/callback/", "http://127.0.0.1:8080/callback?x=1", "https://evil.example/callback"] {
            let query = DevProviderFixture.formEncode(DevProviderFixture.authorizationParameters(redirectURI: uri))
            let response = await fixture.send("GET", "/authorize?" + query)
            #expect(response.status == 400)
            #expect(response.headers["Location"] == nil)
            #expect(response.text.contains("is not registered"))
        }
        // The same holds for the form's POST.
        let post = await fixture.postForm("/authorize", DevProviderFixture.authorizationParameters(
            redirectURI: "https://evil.example/callback") + [("username", "alice")])
        #expect(post.status == 400)
        #expect(post.headers["Location"] == nil)
    }

    @Test("An unknown client gets an error page, never a redirect")
    func unknownClient() async {
        let query = DevProviderFixture.formEncode(DevProviderFixture.authorizationParameters(clientID: "mallory"))
        let response = await DevProviderFixture().send("GET", "/authorize?" + query)
        #expect(response.status == 400)
        #expect(response.headers["Location"] == nil)
    }

    @Test("Errors about a trusted redirect go back with error, state and iss (RFC 9207)",
          arguments: [
              ("code_challenge_method", "plain", "invalid_request"),
              ("code_challenge", "", "invalid_request"),
              ("code_challenge", "short", "invalid_request"),
              ("response_type", "token", "unsupported_response_type"),
              ("scope", "profile", "invalid_scope"),
          ])
    func redirectedErrors(name: String, value: String, expected: String) async {
        var parameters = DevProviderFixture.authorizationParameters().filter { $0.0 != name }
        if !value.isEmpty { parameters.append((name, value)) }
        let response = await DevProviderFixture().send("GET", "/authorize?" + DevProviderFixture.formEncode(parameters))
        #expect(response.status == 302)
        #expect(response.headers["Location"]?.hasPrefix(DevProviderFixture.redirectURI + "?") == true)
        #expect(response.locationQuery["error"] == expected)
        #expect(response.locationQuery["state"] == "state-123")
        #expect(response.locationQuery["iss"] == DevProviderFixture.issuer)
        #expect(response.locationQuery["code"] == nil)
    }

    @Test("A repeated parameter is refused (RFC 6749 §3.1)")
    func repeatedParameter() async {
        let parameters = DevProviderFixture.authorizationParameters() + [("scope", "openid")]
        let response = await DevProviderFixture().send("GET", "/authorize?" + DevProviderFixture.formEncode(parameters))
        #expect(response.locationQuery["error"] == "invalid_request")
    }

    @Test("Signing in issues a one-time code and redirects with code, state and iss")
    func signInIssuesCode() async {
        let fixture = DevProviderFixture()
        let response = await fixture.postForm("/authorize", DevProviderFixture.authorizationParameters()
                                              + [("username", "alice"), ("email", ""), ("action", "approve")])
        #expect(response.status == 302)
        #expect(response.headers["Cache-Control"] == "no-store")
        let query = response.locationQuery
        #expect(query["code"]?.count == 43)
        #expect(query["state"] == "state-123")
        #expect(query["iss"] == DevProviderFixture.issuer)
        #expect(fixture.provider.statistics.authorizationCodesIssued == 1)
    }

    @Test("Deny answers access_denied to the client")
    func deny() async {
        let response = await DevProviderFixture().postForm("/authorize", DevProviderFixture.authorizationParameters()
                                                            + [("username", ""), ("action", "deny")])
        #expect(response.status == 302)
        #expect(response.locationQuery["error"] == "access_denied")
        #expect(response.locationQuery["state"] == "state-123")
        #expect(response.locationQuery["iss"] == DevProviderFixture.issuer)
    }

    @Test("An empty or invalid user name shows the form again, escaped, without a code")
    func invalidUserName() async {
        let fixture = DevProviderFixture()
        let empty = await fixture.postForm("/authorize", DevProviderFixture.authorizationParameters() + [("username", " ")])
        #expect(empty.status == 400)
        #expect(empty.text.contains("Enter a user name."))
        let hostile = await fixture.postForm("/authorize", DevProviderFixture.authorizationParameters()
                                             + [("username", "alice"), ("email", "<b> @x")])
        #expect(hostile.status == 400)
        #expect(hostile.text.contains("&lt;b&gt; @x"))
        #expect(!hostile.text.contains("<b>"))
        #expect(fixture.provider.statistics.authorizationCodesIssued == 0)
    }

    @Test("prompt=none answers login_required")
    func promptNone() async {
        let parameters = DevProviderFixture.authorizationParameters() + [("prompt", "none")]
        let response = await DevProviderFixture().send("GET", "/authorize?" + DevProviderFixture.formEncode(parameters))
        #expect(response.locationQuery["error"] == "login_required")
    }
}
