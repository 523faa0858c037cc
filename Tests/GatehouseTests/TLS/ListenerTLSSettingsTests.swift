@testable import Gatehouse
import GatehouseCore
import HTTP1
import Testing

/// `GATEHOUSE_TLS_*`, `_HTTP_REDIRECT_LISTEN` and `_ACME_*` as the loader reads them, and where
/// the redirect listener sends a browser.
@Suite("Listener TLS settings")
struct ListenerTLSSettingsTests {
    static let base = ["GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa",
                       "GATEHOUSE_PUBLIC_URL": "https://app.example.com", "GATEHOUSE_LISTEN": "0.0.0.0:8443"]

    func issues(_ extra: [String: String]) -> [String] {
        switch GatehouseConfiguration.load(environment: Self.base.merging(extra) { $1 }, requireSecretKey: false) {
        case .success: return []
        case .failure(let errors): return errors.issues.map(\.variable)
        }
    }

    func settings(_ extra: [String: String]) throws -> ListenerTLSSettings {
        try GatehouseConfiguration.load(environment: Self.base.merging(extra) { $1 }, requireSecretKey: false).get().listenerTLS
    }

    @Test("a certificate and its key go together; neither means plain HTTP")
    func pairs() throws {
        #expect(try !settings([:]).isEnabled)
        let files = try settings(["GATEHOUSE_TLS_CERT": "/c.pem", "GATEHOUSE_TLS_KEY": "/k.pem"])
        #expect(files.isEnabled && files.certificateFile == "/c.pem" && files.keyFile == "/k.pem")
        #expect(issues(["GATEHOUSE_TLS_CERT": "/c.pem"]) == ["GATEHOUSE_TLS_KEY"])
        #expect(issues(["GATEHOUSE_TLS_KEY": "/k.pem"]) == ["GATEHOUSE_TLS_CERT"])
    }

    @Test("the redirect listener needs a port of its own")
    func redirectPort() throws {
        #expect(try settings(["GATEHOUSE_HTTP_REDIRECT_LISTEN": "0.0.0.0:8080"]).redirectListen?.description == "0.0.0.0:8080")
        #expect(issues(["GATEHOUSE_HTTP_REDIRECT_LISTEN": "0.0.0.0:8443"]) == ["GATEHOUSE_HTTP_REDIRECT_LISTEN"])
        #expect(issues(["GATEHOUSE_HTTP_REDIRECT_LISTEN": "0.0.0.0:9090", "GATEHOUSE_METRICS_LISTEN": "127.0.0.1:9090"])
            .contains("GATEHOUSE_HTTP_REDIRECT_LISTEN"))
        #expect(issues(["GATEHOUSE_HTTP_REDIRECT_LISTEN": "8080"]) == ["GATEHOUSE_HTTP_REDIRECT_LISTEN"])
    }

    @Test("ACME: an https directory, DNS names without wildcards, one email, not with certificate files")
    func acme() throws {
        let acme = try #require(try settings(["GATEHOUSE_ACME_DIRECTORY": "https://acme.example/dir",
                                              "GATEHOUSE_ACME_DOMAINS": " App.Example.com , www.example.com ",
                                              "GATEHOUSE_ACME_EMAIL": "ops@example.com"]).acme)
        #expect(acme.domains == ["app.example.com", "www.example.com"] && acme.email == "ops@example.com" && acme.caBundle == nil)
        let directory = ["GATEHOUSE_ACME_DIRECTORY": "https://acme.example/dir", "GATEHOUSE_ACME_DOMAINS": "a.example"]
        #expect(issues(["GATEHOUSE_ACME_DIRECTORY": "http://acme.example/dir", "GATEHOUSE_ACME_DOMAINS": "a.example"]) == ["GATEHOUSE_ACME_DIRECTORY"])
        #expect(issues(["GATEHOUSE_ACME_DIRECTORY": "https://acme.example/dir"]) == ["GATEHOUSE_ACME_DOMAINS"])
        for bad in ["*.example.com", "a..example", "-a.example", "a_b.example", String(repeating: "a", count: 64) + ".example"] {
            #expect(issues(directory.merging(["GATEHOUSE_ACME_DOMAINS": bad]) { $1 }) == ["GATEHOUSE_ACME_DOMAINS"], "\(bad)")
        }
        #expect(issues(directory.merging(["GATEHOUSE_ACME_EMAIL": "a@b@c"]) { $1 }) == ["GATEHOUSE_ACME_EMAIL"])
        #expect(issues(directory.merging(["GATEHOUSE_TLS_CERT": "/c", "GATEHOUSE_TLS_KEY": "/k"]) { $1 }) == ["GATEHOUSE_ACME_DIRECTORY"])
        #expect(issues(["GATEHOUSE_ACME_EMAIL": "ops@example.com"]) == ["GATEHOUSE_ACME_EMAIL"])
    }

    @Test("the redirect goes to the public origin, or to an ACME domain the Host names; never elsewhere")
    func redirectLocation() throws {
        let listener = HTTPSRedirectListener(publicURL: try PublicURL(parsing: "https://app.example.com:8443"),
                                             acmeDomains: ["app.example.com", "www.example.com"],
                                             challenges: ACMEChallengeAnswers(), secure: SecuredAnswers(strictTransportSecurity: nil))
        func location(_ target: String, host: String) -> String {
            listener.location(for: HTTPRequestHead(method: "GET", target: target, headers: ["Host": host]))
        }
        #expect(location("/a/b?c=1", host: "app.example.com") == "https://app.example.com:8443/a/b?c=1")
        #expect(location("/a", host: "www.example.com:80") == "https://www.example.com/a")
        #expect(location("/a", host: "evil.example") == "https://app.example.com:8443/a")
        #expect(location("//evil.example/a", host: "app.example.com") == "https://app.example.com:8443/")
        #expect(location("*", host: "app.example.com") == "https://app.example.com:8443/")
    }
}
