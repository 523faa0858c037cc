import Crypto
import Testing
@testable import GatehouseCore

/// Route options that would weaken a route's policy are refused at start, naming the route.
@Suite("Configuration: route option combinations refused at start")
struct RouteCombinationTests {
    private func routeIssues(_ environment: [String: String]) -> [String] {
        guard case .failure(let errors) = GatehouseConfiguration.load(environment: environment, requireSecretKey: false)
        else { return [] }
        return errors.issues.filter { $0.variable == "GATEHOUSE_ROUTES" }.map(\.message)
    }

    @Test("providers= on auth=client;session=optional is refused (dropping the cookie would lift it)")
    func providersOnOptionalClientSession() {
        let base = ["GATEHOUSE_PROVIDERS": "corp,social",
                    "GATEHOUSE_IDP_CORP_ISSUER": "https://corp.example", "GATEHOUSE_IDP_CORP_CLIENT_ID": "c",
                    "GATEHOUSE_IDP_CORP_CLIENT_SECRET": "s",
                    "GATEHOUSE_IDP_SOCIAL_ISSUER": "https://social.example", "GATEHOUSE_IDP_SOCIAL_CLIENT_ID": "c"]
        var refused = base
        refused["GATEHOUSE_ROUTES"] = "/svc=http://up;auth=client;scope=r;session=optional;providers=corp"
        let found = routeIssues(refused)
        #expect(found.contains { $0.contains("\"/svc\"") && $0.contains("session=optional") }, "\(found)")
        var required = base
        required["GATEHOUSE_ROUTES"] = "/svc=http://up;auth=client;scope=r;providers=corp"
        #expect(routeIssues(required).isEmpty)
    }

    @Test("auth=client under the FAPI 2.0 profile is refused (an unbound bearer upstream)")
    func clientRouteUnderFAPI2() {
        let environment = [
            "GATEHOUSE_ISSUER": "https://bank.example.com", "GATEHOUSE_CLIENT_ID": "client",
            "GATEHOUSE_ID_TOKEN_ALGS": "PS256,ES256", "GATEHOUSE_SECURITY_PROFILE": "fapi2", "GATEHOUSE_CLIENT_AUTH_METHOD": "private_key_jwt",
            "GATEHOUSE_CLIENT_PRIVATE_KEY": P256.Signing.PrivateKey().pemRepresentation, "GATEHOUSE_DPOP": "on",
            "GATEHOUSE_PUBLIC_URL": "https://app.example.com",
            "GATEHOUSE_ROUTES": "/api=http://up,/svc=http://up;auth=client;scope=r",
        ]
        let found = routeIssues(environment)
        #expect(found.contains { $0.contains("\"/svc\"") && $0.contains("fapi2") }, "\(found)")
        #expect(!found.contains { $0.contains("\"/api\"") })
        var plain = environment
        plain["GATEHOUSE_SECURITY_PROFILE"] = nil
        #expect(routeIssues(plain).isEmpty)
    }
}
