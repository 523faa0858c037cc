import Testing
@testable import Gatehouse

@Suite("Own paths")
struct OwnPathTests {
    @Test("each own path is recognised exactly", arguments: [
        ("/login", OwnPath.login), ("/callback", .callback), ("/user", .user), ("/logout", .logout),
        ("/backchannel-logout", .backchannelLogout), ("/healthz", .healthz), ("/readyz", .readyz), ("/metrics", .metrics),
    ])
    func exact(path: String, expected: OwnPath) {
        #expect(OwnPath(path[...]) == expected)
    }

    @Test("near misses are not own paths", arguments: [
        "/Login", "/login/", "/logins", "/logou", "/users", "/user/", "/healthy", "/metricz", "/readyzz", "/api",
        "", "/", "/callback?x", "/backchannel-logouT", "/%6cogin", "/api/hello",
    ])
    func nearMiss(path: String) {
        #expect(OwnPath(path[...]) == nil)
    }
}
