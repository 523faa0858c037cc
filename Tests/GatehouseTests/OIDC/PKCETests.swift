import Foundation
import GatehouseOIDC
import Testing
import GatehouseEncoding

@Suite("PKCE (RFC 7636) and random tokens")
struct PKCETests {
    // RFC 7636 App. B's verifier is dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk (the 32 octets below);
    // "dBjftJeZ4CVP-mJ92K9qkBrJ5ZGt6JiT7tkVIKQvXYs", quoted in some write-ups, is not it and hashes
    // to frNpY2AfdWQsduZPKZXgKOQOxYAsdapsYYNT-z960Lo.
    static let appendixBOctets: [UInt8] = [116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186,
                                           22, 212, 37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121]

    @Test("S256 challenge matches RFC 7636 App. B")
    func s256MatchesAppendixB() throws {
        let verifier = CodeVerifier.make(random: RandomBytes { _ in Self.appendixBOctets })
        #expect(verifier.value == "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        let challenge = CodeChallenge.s256(for: verifier)
        #expect(challenge.value == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(challenge.method == .s256)
    }

    @Test("A made verifier is 32 random bytes as 43 base64url characters (RFC 7636 §4.1)")
    func verifierShape() {
        let verifier = CodeVerifier.make(random: RandomBytes { count in Array(repeating: 0xff, count: count) })
        #expect(verifier.value == String(repeating: "_", count: 42) + "8")
        let fresh = CodeVerifier.make()
        #expect(fresh.value.count == 43)
        #expect(CodeVerifier(fresh.value) == fresh)
        #expect(fresh != CodeVerifier.make())
    }

    @Test("A stored verifier outside 43…128 unreserved characters is refused")
    func verifierValidation() {
        #expect(CodeVerifier(String(repeating: "a", count: 42)) == nil)
        #expect(CodeVerifier(String(repeating: "a", count: 129)) == nil)
        #expect(CodeVerifier(String(repeating: "a", count: 42) + "+") == nil)
        #expect(CodeVerifier(String(repeating: "a", count: 128)) != nil)
    }

    @Test("Verifiers and pending secrets never print their value")
    func redacted() {
        let verifier = CodeVerifier.make()
        #expect(!"\(verifier)".contains(verifier.value))
    }

    @Test("RandomToken carries at least 128 bits; 32 bytes by default")
    func randomTokenSizes() {
        #expect(RandomToken.make().count == 43)
        #expect(RandomToken.make(bytes: 4).count == 22)
        #expect(RandomToken.make() != RandomToken.make())
    }

    @Test("A short random source is topped up, never shortening a secret")
    func shortRandomSource() {
        let token = RandomToken.make(bytes: 32, random: RandomBytes { _ in [1, 2, 3] })
        #expect(token.count == 43)
    }

    @Test("Base64url round-trips every length and uses - and _ without padding")
    func base64URLRoundTrip() {
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.encode(Array("hello".utf8)) == "aGVsbG8")
        for length in 0...40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }

    @Test("Base64url decoding refuses padding, the standard alphabet and impossible lengths")
    func base64URLRefusals() {
        #expect(Base64URL.decode("aGVsbG8=") == nil)
        #expect(Base64URL.decode("a+b/") == nil)
        #expect(Base64URL.decode("abcde") == nil)
        #expect(Base64URL.decode("") == [])
    }

    @Test("Constant-time comparison")
    func constantTime() {
        #expect(ConstantTime.equals("abc", "abc"))
        #expect(!ConstantTime.equals("abc", "abd"))
        #expect(!ConstantTime.equals("abc", "abcd"))
    }
}
