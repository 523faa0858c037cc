import GatehouseSessions
import Testing
import GatehouseEncoding

@Suite("SessionID (opaque session cookie value) and secret helpers")
struct SessionIDTests {
    @Test("A generated id is 43 base64url characters and its hash is 64 lowercase hex")
    func shape() {
        let id = SessionID.generate()
        #expect(id.cookieValue.utf8.count == 43)
        #expect(id.cookieValue.utf8.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        })
        #expect(id.hash.count == 64)
        #expect(id.hash == SecretHash.hex(of: id.cookieValue))
        #expect(id.hash.allSatisfy { "0123456789abcdef".contains($0) })
    }

    @Test("Generated ids do not repeat")
    func unique() {
        let ids = Set((0..<1_000).map { _ in SessionID.generate().cookieValue })
        #expect(ids.count == 1_000)
    }

    @Test("A generated cookie value parses back to the same id")
    func parsesOwnValue() throws {
        let id = SessionID.generate()
        let parsed = try #require(SessionID(cookieValue: id.cookieValue))
        #expect(parsed == id)
        #expect(parsed.hash == id.hash)
    }

    @Test("Malformed cookie values are refused before hashing", arguments: [
        "", "abc", String(repeating: "A", count: 42), String(repeating: "A", count: 44),
        String(repeating: "A", count: 42) + "=", String(repeating: "A", count: 42) + "+",
        String(repeating: "A", count: 42) + "/", String(repeating: "A", count: 42) + "B",  // non-canonical last bits
        String(repeating: "A", count: 41) + "é", String(repeating: "A", count: 42) + "\0",
    ])
    func refusesMalformed(value: String) {
        #expect(SessionID(cookieValue: value) == nil)
    }

    @Test("Canonical last characters (low bits zero) are accepted", arguments: ["A", "E", "Q", "w", "0", "4", "8"])
    func acceptsCanonicalLastCharacter(last: String) {
        #expect(SessionID(cookieValue: String(repeating: "A", count: 42) + last) != nil)
    }

    @Test("Description never shows the cookie value")
    func descriptionRedacts() {
        let id = SessionID.generate()
        #expect(!"\(id)".contains(id.cookieValue))
        #expect(!String(reflecting: id).contains(id.cookieValue))
        #expect(!dumped(id).contains(id.cookieValue))
    }

    @Test("SecretHash.hex is SHA-256 (FIPS 180-2 'abc' vector)")
    func sha256Vector() {
        #expect(SecretHash.hex(of: "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("Token and pending-login descriptions never show secrets")
    func redaction() {
        let tokens = TokenSet.make(access: "AT-SECRET", refresh: "RT-SECRET", id: "IDT-SECRET")
        for text in ["\(tokens)", String(reflecting: tokens), dumped(tokens)] {
            #expect(!text.contains("AT-SECRET") && !text.contains("RT-SECRET") && !text.contains("IDT-SECRET"))
        }
        let login = PendingLogin.make(verifier: "VERIFIER-SECRET", nonce: "NONCE-SECRET")
        for text in ["\(login)", String(reflecting: login), dumped(login)] {
            #expect(!text.contains("VERIFIER-SECRET") && !text.contains("NONCE-SECRET"))
        }
    }

    private func dumped(_ value: some Any) -> String {
        var out = ""
        dump(value, to: &out)
        return out
    }
}
