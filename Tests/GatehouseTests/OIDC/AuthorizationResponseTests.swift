import GatehouseOIDC
import Testing

/// The callback's protocol checks, without sockets (issue 11: `src/proto` vs `src/handle`).
@Suite("Authorization response (RFC 6749 §4.1.2, RFC 9207, RFC 9700 §4.7)")
struct AuthorizationResponseTests {
    private func response(_ pairs: [(String, String?)]) throws(AuthorizationResponse.Refusal) -> AuthorizationResponse {
        try AuthorizationResponse(parameters: pairs.map { (name: $0.0, value: $0.1) })
    }

    private let issuer = "https://idp.example"

    @Test("A complete response yields its state, then its code")
    func accepted() throws {
        let r = try response([("code", "C"), ("state", "S"), ("iss", issuer)])
        #expect(r.state == "S")
        try r.checkBrowserAndOutcome(presentedBindingHashes: ["other", "B"], pendingBindingHash: "B")
        #expect(try r.code(expectedIssuer: issuer, issuerRequired: true) == "C")
    }

    @Test("A repeated protocol parameter is refused", arguments: ["state", "code", "iss", "error"])
    func repeated(name: String) {
        #expect(throws: AuthorizationResponse.Refusal.repeatedParameter(name)) {
            try response([("state", "S"), ("code", "C"), (name, "x"), (name, "y")])
        }
    }

    @Test("A missing, empty or malformed state is refused")
    func missingState() {
        for pairs: [(String, String?)] in [[("code", "C")], [("state", ""), ("code", "C")], [("state", nil), ("code", "C")]] {
            #expect(throws: AuthorizationResponse.Refusal.missingState) { try response(pairs) }
        }
    }

    @Test("Another browser (no or a different binding cookie) is refused before the provider's error")
    func wrongBrowser() throws {
        let r = try response([("state", "S"), ("error", "access_denied")])
        #expect(throws: AuthorizationResponse.Refusal.wrongBrowser) {
            try r.checkBrowserAndOutcome(presentedBindingHashes: [], pendingBindingHash: "B")
        }
        #expect(throws: AuthorizationResponse.Refusal.wrongBrowser) {
            try r.checkBrowserAndOutcome(presentedBindingHashes: ["b"], pendingBindingHash: "B")
        }
    }

    @Test("The provider's error ends the login, reduced to letters and _ for the log")
    func providerError() throws {
        let r = try response([("state", "S"), ("error", "access_denied<script>\n")])
        #expect(throws: AuthorizationResponse.Refusal.providerError("access_deniedscript")) {
            try r.checkBrowserAndOutcome(presentedBindingHashes: ["B"], pendingBindingHash: "B")
        }
    }

    @Test("iss must equal the issuer, and is required when the provider advertises it")
    func issuerChecks() throws {
        let wrong = try response([("state", "S"), ("code", "C"), ("iss", "https://evil.example")])
        #expect(throws: AuthorizationResponse.Refusal.issuer(.mismatch(expected: issuer, actual: "https://evil.example"))) {
            try wrong.code(expectedIssuer: issuer, issuerRequired: false)
        }
        let without = try response([("state", "S"), ("code", "C")])
        #expect(throws: AuthorizationResponse.Refusal.issuer(.missing)) {
            try without.code(expectedIssuer: issuer, issuerRequired: true)
        }
        #expect(try without.code(expectedIssuer: issuer, issuerRequired: false) == "C")
    }

    @Test("A missing or empty code is refused after the issuer check")
    func missingCode() throws {
        for pairs: [(String, String?)] in [[("state", "S")], [("state", "S"), ("code", "")], [("state", "S"), ("code", nil)]] {
            let r = try response(pairs)
            #expect(throws: AuthorizationResponse.Refusal.missingCode) { try r.code(expectedIssuer: issuer, issuerRequired: false) }
        }
    }
}
