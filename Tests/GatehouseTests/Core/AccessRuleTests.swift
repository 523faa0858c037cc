import Testing
@testable import GatehouseCore

private struct Claims: ClaimReading {
    var byClaim: [AccessRule.Claim: [String]]
    func values(of claim: AccessRule.Claim) -> [String] { byClaim[claim] ?? [] }
}

/// The `allow=` grammar and its evaluation (SPEC "Who may call what").
@Suite("Access rules (allow=)")
struct AccessRuleTests {
    @Test("terms joined by +, values by |; the description is the rule as written")
    func parses() throws {
        let rule = try AccessRule.parse("groups:admin|ops+email_domain:example.com")
        #expect(rule.terms.map(\.claim) == [.groups, .emailDomain])
        #expect(rule.terms[0].values == ["admin", "ops"])
        #expect(rule.description == "groups:admin|ops+email_domain:example.com")
    }

    @Test("a URL claim name keeps its scheme's colon", arguments: [
        ("https://example.com/roles:admin", "https://example.com/roles", ["admin"]),
        ("http://x.example/claims/tier:gold|silver", "http://x.example/claims/tier", ["gold", "silver"]),
        ("sub:urn:x:1", "sub", ["urn:x:1"]),
    ])
    func urlClaims(text: String, claim: String, values: [String]) throws {
        let rule = try AccessRule.parse(text)
        #expect(rule.terms.first?.claim.description == claim)
        #expect(rule.terms.first?.values == values)
    }

    @Test("malformed rules are refused", arguments: ["", "groups", "groups:", "groups:a||b", "+groups:a", "groups:a+",
                                                     ":admin", "gro ups:a", "groups:|a"])
    func refused(text: String) {
        #expect(throws: AccessRule.ParseError.self) { try AccessRule.parse(text) }
    }

    @Test("every term must hold, any value of a term will do")
    func evaluation() throws {
        let rule = try AccessRule.parse("groups:admin|ops+email_domain:example.com")
        let admin = Claims(byClaim: [.groups: ["staff", "ops"], .emailDomain: ["EXAMPLE.com"]])
        #expect(rule.isSatisfied(by: admin))
        #expect(!rule.isSatisfied(by: Claims(byClaim: [.groups: ["ops"]])), "no verified email")
        #expect(!rule.isSatisfied(by: Claims(byClaim: [.groups: ["staff"], .emailDomain: ["example.com"]])))
        #expect(!rule.isSatisfied(by: Claims(byClaim: [.groups: ["ops"], .emailDomain: ["evil.example.com"]])))
    }

    @Test("only email and email_domain ignore case")
    func caseRules() throws {
        #expect(try AccessRule.parse("email:Ceo@Example.com").isSatisfied(by: Claims(byClaim: [.email: ["ceo@example.COM"]])))
        #expect(!(try AccessRule.parse("groups:Admin").isSatisfied(by: Claims(byClaim: [.groups: ["admin"]]))))
        #expect(!(try AccessRule.parse("sub:ABC").isSatisfied(by: Claims(byClaim: [.sub: ["abc"]]))))
    }

    @Test("allow= as a route option: parsed, refused where a caller without a session passes")
    func routeOption() throws {
        let (routes, errors) = UpstreamRoute.parseList("/admin=http://up;allow=groups:admin,/o=http://up;auth=optional;allow=sub:1")
        #expect(errors.isEmpty)
        #expect(routes.first { $0.prefix == "/admin" }?.allow?.description == "groups:admin")
        #expect(routes.first { $0.prefix == "/admin" }?.readsSession == true)
        for bad in ["/a=http://up;auth=none;allow=groups:a", "/a=http://up;auth=client;session=optional;allow=groups:a",
                    "/a=http://up;allow=groups"] {
            #expect(!UpstreamRoute.parseList(bad).errors.isEmpty, "\(bad)")
        }
        // Repeated: alternatives, any one of which admits.
        let either = try #require(UpstreamRoute.parseList("/a=http://up;allow=groups:a;allow=sub:b").routes.first?.allow)
        #expect(either.alternatives.count == 2 && either.description == "groups:a;allow=sub:b")
        #expect(either.isSatisfied(by: Claims(byClaim: [.sub: ["b"]])))
        #expect(either.isSatisfied(by: Claims(byClaim: [.groups: ["a"]])))
        #expect(!either.isSatisfied(by: Claims(byClaim: [.groups: ["b"], .sub: ["a"]])))
        #expect(UpstreamRoute.parseList("/a=http://up;auth=client;scope=s;allow=groups:a").errors.isEmpty)
    }

    @Test("a rule naming an unknown provider stops the start, naming the route")
    func unknownProvider() {
        let environment = ["GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa",
                           "GATEHOUSE_ROUTES": "/admin=http://up;allow=provider:corp"]
        guard case .failure(let errors) = GatehouseConfiguration.load(environment: environment, requireSecretKey: false) else {
            Issue.record("accepted")
            return
        }
        #expect(errors.issues.contains { $0.variable == "GATEHOUSE_ROUTES" && $0.message.contains("\"/admin\"") && $0.message.contains("corp") })
        var fine = environment
        fine["GATEHOUSE_ROUTES"] = "/admin=http://up;allow=provider:default"
        #expect((try? GatehouseConfiguration.load(environment: fine, requireSecretKey: false).get()) != nil)
    }

    @Test("login gates: every gate set must be met")
    func loginGates() {
        let gate = LoginGate(emailDomains: ["Example.com"], groups: ["staff"])
        #expect(gate.refusal(Claims(byClaim: [.emailDomain: ["example.COM"], .groups: ["staff"]])) == nil)
        #expect(gate.refusal(Claims(byClaim: [.emailDomain: ["example.com"]])) != nil)
        #expect(gate.refusal(Claims(byClaim: [.emailDomain: ["sub.example.com"], .groups: ["staff"]])) != nil)
        #expect(LoginGate().isOpen && LoginGate().refusal(Claims(byClaim: [:])) == nil)
    }

    @Test("login gate variables, per provider too; empty lists refused")
    func gateVariables() throws {
        let base = ["GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa"]
        let config = try GatehouseConfiguration.load(environment: base.merging([
            "GATEHOUSE_ALLOWED_EMAIL_DOMAINS": "example.com, Example.org", "GATEHOUSE_GROUPS_CLAIM": "realm_access.roles",
        ]) { $1 }, requireSecretKey: false).get()
        #expect(config.idp.loginGate.emailDomains == ["example.com", "example.org"])
        #expect(config.idp.groupsClaim == "realm_access.roles")
        for (name, value) in [("GATEHOUSE_ALLOWED_EMAIL_DOMAINS", ","), ("GATEHOUSE_ALLOWED_EMAILS", "not-an-email"),
                              ("GATEHOUSE_GROUPS_CLAIM", "a..b")] {
            guard case .failure(let errors) = GatehouseConfiguration.load(environment: base.merging([name: value]) { $1 },
                                                                         requireSecretKey: false) else {
                Issue.record("\(name)=\(value) accepted")
                continue
            }
            #expect(errors.issues.contains { $0.variable == name })
        }
    }
}
