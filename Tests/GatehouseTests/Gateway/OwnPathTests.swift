import GatehouseCore
import Testing
@testable import Gatehouse

@Suite("Own paths")
struct OwnPathTests {
    @Test("each own path is recognised exactly", arguments: [
        ("/login", OwnPath.login), ("/callback", .callback), ("/user", .user), ("/logout", .logout),
        ("/backchannel-logout", .backchannelLogout), ("/healthz", .healthz), ("/readyz", .readyz), ("/metrics", .metrics),
        ("/sessions", .sessions), ("/sessions/revoke", .sessionsRevoke), ("/.well-known/jwks.json", .jwks),
        ("/auth", .auth), ("/frontchannel-logout", .frontchannelLogout),
    ])
    func exact(path: String, expected: OwnPath) {
        #expect(OwnPath(path[...]) == expected)
    }

    @Test("the endpoint table has one row per own path, in the order of the cases, and spells each fixed path")
    func tableMatchesCases() {
        #expect(OwnEndpoint.table.map(\.path) == OwnPath.allCases)
        for row in OwnEndpoint.table where row.shape == .fixed {
            #expect(OwnPath(String(describing: row.spelling)[...]) == row.path)
        }
        #expect(Set(OwnEndpoint.table.map { String(describing: $0.spelling) }).count == OwnEndpoint.table.count,
                "no two rows spell the same path")
    }

    @Test("near misses are not own paths", arguments: [
        "/Login", "/login/", "/logins", "/logou", "/users", "/user/", "/healthy", "/metricz", "/readyzz", "/api",
        "", "/", "/callback?x", "/backchannel-logouT", "/%6cogin", "/api/hello", "/auth/", "/authz", "/Auth",
        "/frontchannel-logouts", "/frontchannel-logout/",
    ])
    func nearMiss(path: String) {
        #expect(OwnPath(path[...]) == nil)
    }

    @Test("/providers is always ours; the providers' own paths only with GATEHOUSE_PROVIDERS")
    func providerPaths() {
        #expect(OwnPath("/providers"[...]) == .providers)
        #expect(OwnPath("/callback/google"[...]) == nil, "the SPA's, as it always was, with one provider")
        #expect(OwnPath("/callback/google"[...], namedProviders: true) == .providerCallback)
        #expect(OwnPath("/backchannel-logout/corp-sso"[...], namedProviders: true) == .providerBackchannelLogout)
        #expect(OwnPath.providerName(in: "/callback/google"[...], of: .providerCallback) == "google")
        #expect(OwnPath.providerName(in: "/backchannel-logout/corp-sso"[...], of: .providerBackchannelLogout) == "corp-sso")
        #expect(OwnPath("/frontchannel-logout/corp-sso"[...], namedProviders: true) == .providerFrontchannelLogout)
        #expect(OwnPath("/frontchannel-logout/corp-sso"[...]) == nil)
        #expect(OwnPath.providerName(in: "/frontchannel-logout/corp-sso"[...], of: .providerFrontchannelLogout) == "corp-sso")
        // An empty name and names past the longest possible are no provider paths.
        #expect(OwnPath("/callback/"[...], namedProviders: true) == nil)
        #expect(OwnPath(("/callback/" + String(repeating: "x", count: 33))[...], namedProviders: true) == nil)
        #expect(OwnPath("/callbacks/google"[...], namedProviders: true) == nil)
        #expect(OwnPath("/api/callback/google"[...], namedProviders: true) == nil)
    }

    @Test("/request-object/{handle} is ours only when a provider passes request objects by reference; logs hide the handle")
    func requestObjectPath() {
        let handle = String(repeating: "ab", count: 32)
        #expect(OwnPath(("/request-object/" + handle)[...]) == nil, "the SPA's otherwise")
        #expect(OwnPath(("/request-object/" + handle)[...], requestObjects: true) == .requestObject)
        #expect(OwnPath("/request-object/"[...], requestObjects: true) == nil)
        #expect(OwnPath("/request-objects/x"[...], requestObjects: true) == nil)
        #expect(OwnPath.providerName(in: ("/request-object/" + handle)[...], of: .requestObject) == handle)
        #expect(OwnPath.withoutHandle(("/request-object/" + handle)[...]) == "/request-object/{handle}")
        #expect(OwnPath.withoutHandle("/api/items"[...]) == "/api/items")
        #expect(OwnEndpoint.of(.requestObject).methods == ["GET"])
        #expect(OwnEndpoint.of(.requestObject).requiresAntiForgery(method: "GET") == false)
        #expect(RequestObjectEndpoint.isStateHash(handle))
        #expect(!RequestObjectEndpoint.isStateHash(handle.uppercased()))
        #expect(!RequestObjectEndpoint.isStateHash(String(handle.dropLast())))
        #expect(!RequestObjectEndpoint.isStateHash(String(handle.dropLast()) + "g"))
        #expect(!RequestObjectEndpoint.isStateHash("../../" + String(handle.dropFirst(6))))
    }

    @Test("A provider path as long as a fixed one is still the provider's (every name length)")
    func providerPathsOfEveryLength() {
        for length in 1...32 {
            let name = String(repeating: "p", count: length)
            #expect(OwnPath(("/callback/" + name)[...], namedProviders: true) == .providerCallback, "\(length)")
            #expect(OwnPath(("/backchannel-logout/" + name)[...], namedProviders: true) == .providerBackchannelLogout, "\(length)")
        }
    }

    @Test("Auth0: a login started with organization must come back with that org_id (or org_name)")
    func organizationClaims() {
        let auth0 = ProviderProfile.named(.auth0)
        #expect(LoginClaimChecks.required(by: [("organization", "org_abc")], profile: auth0) == ["org_id": "org_abc"])
        #expect(LoginClaimChecks.required(by: [("organization", "Acme")], profile: auth0) == ["org_name": "acme"])
        #expect(LoginClaimChecks.required(by: [("login_hint", "x")], profile: auth0).isEmpty)
        #expect(LoginClaimChecks.required(by: [("organization", "org_abc")], profile: .named(.generic)).isEmpty)
    }

    @Test("metrics carry a provider label only with several providers")
    func metricsLabels() {
        let metrics = GatewayMetrics()
        metrics.loginStarted()
        metrics.loginFailed(reason: "claim")
        var text = metrics.render()
        #expect(text.contains("gatehouse_logins_started_total 1\n"))
        #expect(text.contains("gatehouse_logins_failed_total{reason=\"claim\"} 1\n"))
        let named = GatewayMetrics()
        named.loginStarted(provider: "google")
        named.loginCompleted(provider: "corp")
        named.refreshFailed(reason: "invalid_grant", provider: "corp")
        named.refreshSucceeded(provider: "google")
        text = named.render()
        #expect(text.contains("gatehouse_logins_started_total{provider=\"google\"} 1\n"))
        #expect(text.contains("gatehouse_logins_completed_total{provider=\"corp\"} 1\n"))
        #expect(text.contains("gatehouse_token_refreshes_total{provider=\"corp\",result=\"failed\",reason=\"invalid_grant\"} 1\n"))
        #expect(text.contains("gatehouse_token_refreshes_total{provider=\"google\",result=\"ok\"} 1\n"))
    }
}
