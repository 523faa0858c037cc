import GatehouseEncoding
import Testing

@Suite("Base64URL")
struct Base64URLTests {
    @Test("RFC 4648 §10 vectors, unpadded", arguments: [
        ("", ""), ("Zg", "f"), ("Zm8", "fo"), ("Zm9v", "foo"), ("Zm9vYg", "foob"), ("Zm9vYmE", "fooba"), ("Zm9vYmFy", "foobar"),
    ])
    func vectors(encoded: String, decoded: String) {
        #expect(Base64URL.encode(Array(decoded.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(decoded.utf8))
        #expect(Base64URL.decode(Array(encoded.utf8)) == Array(decoded.utf8))
    }

    @Test("uses the URL-safe alphabet (RFC 4648 §5)")
    func urlSafeAlphabet() {
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xfb, 0xff])
    }

    @Test("round-trips every length up to 40 bytes")
    func roundTrip() {
        for length in 0...40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }

    @Test("refuses padding, the standard alphabet, impossible lengths and non-canonical trailing bits",
          arguments: ["Zg==", "Zg=", "+_8", "/w", "Z", "Zm9vY", "Zh", "Zm9", "Zm 9v", "Zm9v\n", "é"])
    func refuses(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}

@Suite("PercentEncoding")
struct PercentEncodingTests {
    @Test("query components escape everything but RFC 3986 unreserved; space is %20")
    func queryComponent() {
        #expect(PercentEncoding.encodeQueryComponent("a b&c=d/é~-._") == "a%20b%26c%3Dd%2F%C3%A9~-._")
    }

    @Test("form components write space as + (WHATWG URL §5.2)")
    func formComponent() {
        #expect(PercentEncoding.encodeFormComponent("a b+c") == "a+b%2Bc")
        #expect(PercentEncoding.formBody([("grant_type", "authorization_code"), ("x", "1 2")])
            == Array("grant_type=authorization_code&x=1+2".utf8))
    }

    @Test("appendingQuery keeps an existing query (RFC 6749 §3.1)")
    func appendingQuery() {
        #expect(PercentEncoding.appendingQuery([("a", "1")], to: "https://p/x") == "https://p/x?a=1")
        #expect(PercentEncoding.appendingQuery([("a", "1")], to: "https://p/x?k=v") == "https://p/x?k=v&a=1")
        #expect(PercentEncoding.appendingQuery([("a", "1")], to: "https://p/x?") == "https://p/x?a=1")
        #expect(PercentEncoding.appendingQuery([], to: "https://p/x") == "https://p/x")
    }

    @Test("encode then decode returns the original text",
          arguments: ["", "plain", "a b+c", "%41", "é/ü?#[]", "\u{0}\u{7f}", "100% sure & more"])
    func roundTrip(text: String) {
        #expect(PercentEncoding.decodeString(PercentEncoding.encodeQueryComponent(text)) == text)
        #expect(PercentEncoding.decodeString(PercentEncoding.encodeFormComponent(text), plusAsSpace: true) == text)
    }

    @Test("decoding: + is a space only in form/query syntax, hex of either case")
    func decoding() {
        #expect(PercentEncoding.decodeString("a+b%2fc%2F", plusAsSpace: true) == "a b/c/")
        #expect(PercentEncoding.decodeString("a+b%2fc") == "a+b/c")
        #expect(PercentEncoding.decode(bytes: Array("%00%FF".utf8)) == [0x00, 0xff])
    }

    @Test("refuses malformed escapes", arguments: ["%", "%4", "a%zz", "%g0", "%%41", "x%2"])
    func refusesMalformed(text: String) {
        #expect(PercentEncoding.decode(text) == nil)
        #expect(!PercentEncoding.isWellFormed(text))
    }

    @Test("decodeString refuses bytes that are not UTF-8")
    func refusesInvalidUTF8() {
        #expect(PercentEncoding.decode("%C3%28") == [0xc3, 0x28])
        #expect(PercentEncoding.decodeString("%C3%28") == nil)
    }
}

@Suite("Hex, ConstantTime, RandomToken")
struct SmallEncodingTests {
    @Test("hex is lowercase, two digits a byte; digit values of either case")
    func hex() {
        #expect(Hex.encode([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
        #expect(Hex.value(of: UInt8(ascii: "B")) == 11)
        #expect(Hex.value(of: UInt8(ascii: "b")) == 11)
        #expect(Hex.value(of: UInt8(ascii: "g")) == nil)
    }

    @Test("constant-time comparison compares content and length")
    func constantTime() {
        #expect(ConstantTime.equals("secret", "secret"))
        #expect(!ConstantTime.equals("secret", "secreT"))
        #expect(!ConstantTime.equals("secret", "secret1"))
        #expect(ConstantTime.equals("", ""))
        #expect(ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 3] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 4] as [UInt8]))
    }

    @Test("random tokens carry at least 128 bits and a short source is topped up")
    func randomToken() {
        #expect(RandomToken.make().utf8.count == 43)
        #expect(RandomToken.make(bytes: 1).utf8.count == 22)
        let short = RandomBytes { _ in [1, 2] }
        #expect(short(16).count == 16)
        #expect(RandomToken.make() != RandomToken.make())
    }

    @Test("the system source fills every size asked, beyond getentropy's 256 bytes per call too")
    func systemSourceSizes() {
        for count in [0, 1, 7, 8, 32, 257, 70_000] {
            let bytes = RandomBytes.system(count)
            #expect(bytes.count == count)
            if count >= 32 {
                // 32 zero bytes (or a repeated draw) from a CSPRNG: probability 2^-256.
                #expect(bytes.suffix(32) != [UInt8](repeating: 0, count: 32))
                #expect(RandomBytes.system(count).suffix(32) != bytes.suffix(32))
            }
        }
    }
}

@Suite("Base64 keys")
struct Base64Tests {
    @Test("round-trips and accepts the URL-safe alphabet")
    func roundTrip() {
        let bytes: [UInt8] = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 7 + 250) }
        let standard = Base64.encode(bytes)
        #expect(Base64.decode(standard) == bytes)
        let urlSafe = Base64URL.encode(bytes)
        #expect(Base64.decode(urlSafe) == bytes)
    }

    @Test("known vectors (RFC 4648 §10)", arguments: [
        ("", ""), ("Zg==", "f"), ("Zm8=", "fo"), ("Zm9v", "foo"), ("Zm9vYg==", "foob"), ("Zm9vYmE=", "fooba"),
        ("Zm9vYmFy", "foobar"), ("Zg", "f"), ("Zm8", "fo"),
    ])
    func vectors(encoded: String, decoded: String) {
        #expect(Base64.decode(encoded) == Array(decoded.utf8))
        if encoded.count % 4 == 0 { #expect(Base64.encode(Array(decoded.utf8)) == encoded) }
    }

    @Test("refuses malformed input", arguments: ["Z", "Zm9v!", "Zm 9v", "Zg===", "Z===", "Zh==", "Zg=", "=Zg"])
    func refuses(text: String) {
        #expect(Base64.decode(text) == nil)
    }
}

@Suite("Percent decoding")
struct PercentDecodingTests {
    @Test("decodes escapes and optional plus")
    func decodes() {
        #expect(PercentEncoding.decodeString("a%20b%2Fc") == "a b/c")
        #expect(PercentEncoding.decodeString("a+b", plusAsSpace: true) == "a b")
        #expect(PercentEncoding.decodeString("a+b") == "a+b")
        #expect(PercentEncoding.decodeString("%C3%A9") == "é")
    }

    @Test("refuses malformed escapes and invalid UTF-8", arguments: ["%", "%2", "%zz", "a%g0", "%C3"])
    func refuses(text: String) {
        #expect(PercentEncoding.decodeString(text) == nil)
    }
}
