@testable import DevProvider
import Testing

@Suite("Development provider: form encoding and PKCE")
struct DevProviderFormEncodingTests {
    @Test("Form decoding: + is a space, %XX a byte, the result UTF-8, empty values absent (RFC 6749 §3.1)")
    func decoding() throws {
        let form = try FormParameters(encoded: "a=1&b=two+words&c=%2F%C3%A9&d=&e&&a=2")
        #expect(form["a"] == "1")
        #expect(form["b"] == "two words")
        #expect(form["c"] == "/é")
        #expect(form["d"] == nil && form["e"] == nil)
        #expect(form.firstRepeatedName == "a")
    }

    @Test("Broken escapes and invalid UTF-8 are errors, not crashes", arguments: ["%", "%4", "%G0", "a=%zz", "%FF", "%C3"])
    func brokenInput(input: String) {
        #expect(throws: FormDecodingError.self) { try FormParameters(encoded: input) }
    }

    @Test("Encoding escapes everything but unreserved characters, so values cannot break out")
    func encoding() {
        #expect(FormEncoding.encode("a b&c=d/é~") == "a%20b%26c%3Dd%2F%C3%A9~")
        #expect(FormEncoding.appendingQuery([("code", "x"), ("state", nil)], to: "http://h/cb?k=v") == "http://h/cb?k=v&code=x")
    }

    @Test("S256 matches RFC 7636 Appendix B; malformed verifiers never match")
    func pkce() {
        #expect(PKCE.verifierMatches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
                                     challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"))
        #expect(!PKCE.verifierMatches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXj",
                                      challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"))
        #expect(!PKCE.isValidVerifier(String(repeating: "a", count: 42)))
        #expect(!PKCE.isValidVerifier(String(repeating: "a", count: 129)))
        #expect(!PKCE.isValidVerifier(String(repeating: "a", count: 42) + "+"))
    }
}
