import GatehouseCore
import GatehouseOIDC
import Testing
@testable import Gatehouse

/// How rules read a session's claims: groups from where providers put them, emails only when
/// verified, every claim type.
@Suite("Session claims as access rules read them")
struct SessionClaimsTests {
    private func claims(_ json: String, groupsClaim: String = "groups") -> SessionClaims {
        SessionClaims(claimsJSON: Array(json.utf8), provider: "corp", groupsClaim: groupsClaim)
    }

    @Test("groups: an array, or one space- or comma-separated string")
    func groupShapes() {
        #expect(claims(#"{"groups":["a","b",3]}"#).values(of: .groups) == ["a", "b"])
        #expect(claims(#"{"groups":"a b,c"}"#).values(of: .groups) == ["a", "b", "c"])
        #expect(claims(#"{"groups":{"a":1}}"#).values(of: .groups).isEmpty)
    }

    @Test("groups from a URL claim name first, else a dotted path")
    func groupPlaces() {
        #expect(claims(#"{"https://example.com/roles":["admin"]}"#, groupsClaim: "https://example.com/roles")
            .values(of: .groups) == ["admin"])
        #expect(claims(#"{"realm_access":{"roles":["ops","user"]}}"#, groupsClaim: "realm_access.roles")
            .values(of: .groups) == ["ops", "user"])
        #expect(claims(#"{"a.b":["top"],"a":{"b":["nested"]}}"#, groupsClaim: "a.b").values(of: .groups) == ["top"])
        #expect(claims(#"{"realm_access":{}}"#, groupsClaim: "realm_access.roles").values(of: .groups).isEmpty)
    }

    @Test("email and email_domain only for a verified email; the domain is the part after the last @")
    func emails() {
        let verified = claims(#"{"email":"a@evil.example.com","email_verified":true}"#)
        #expect(verified.values(of: .email) == ["a@evil.example.com"])
        #expect(verified.values(of: .emailDomain) == ["evil.example.com"])
        #expect(claims(#"{"email":"a@example.com","email_verified":"true"}"#).values(of: .emailDomain) == ["example.com"])
        for unverified in [#"{"email":"a@example.com"}"#, #"{"email":"a@example.com","email_verified":false}"#,
                           #"{"email":"a@example.com","email_verified":"yes"}"#] {
            #expect(claims(unverified).values(of: .email).isEmpty)
            #expect(claims(unverified).values(of: .emailDomain).isEmpty)
        }
    }

    @Test("every claim type: strings, numbers, booleans, arrays of strings; sub and provider")
    func claimTypes() throws {
        let session = claims(#"{"sub":"u1","tier":"gold","level":3,"ratio":0.5,"staff":true,"tags":["x","y"],"obj":{"a":1}}"#)
        #expect(session.values(of: .sub) == ["u1"])
        #expect(session.values(of: .provider) == ["corp"])
        #expect(session.values(of: .other("tier")) == ["gold"])
        #expect(session.values(of: .other("level")) == ["3"])
        #expect(session.values(of: .other("ratio")) == ["0.5"])
        #expect(session.values(of: .other("staff")) == ["true"])
        #expect(session.values(of: .other("tags")) == ["x", "y"])
        #expect(session.values(of: .other("obj")).isEmpty)
        #expect(try AccessRule.parse("level:3+staff:true+tags:y+provider:corp").isSatisfied(by: session))
        #expect(!(try AccessRule.parse("level:4").isSatisfied(by: session)))
    }
}
