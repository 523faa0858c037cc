import Foundation
import GatehouseOIDC
import Testing

/// `JSONValue.parse`: the one-pass reader of token responses, JWT headers and claims, UserInfo
/// answers and key sets. It must read what `JSONDecoder` reads, and refuse what would be ambiguous.
@Suite("JSONValue.parse")
struct JSONParserTests {
    private func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(Array(text.utf8)) }

    @Test("Every kind, nested, with whitespace around and inside")
    func kinds() throws {
        let text = " \t\r\n{\"s\":\"1\", \"n\": 1,\"z\":0,\"f\":-1.5e2,\"t\":true,\"b\":false,\"x\":null,\n"
            + "\"a\":[1,\"1\",true,null,{\"k\":[]}],\"o\":{\"e\":{}}} \n"
        #expect(try parse(text) == .object([
            "s": .string("1"), "n": .number(1), "z": .number(0), "f": .number(-150), "t": .bool(true), "b": .bool(false),
            "x": .null, "a": .array([.number(1), .string("1"), .bool(true), .null, .object(["k": .array([])])]),
            "o": .object(["e": .object([:])]),
        ]))
        #expect(try parse("[]") == .array([]))
        #expect(try parse("\"\"") == .string(""))
        #expect(try parse("0.25") == .number(0.25))
        #expect(try parse("1E+2") == .number(100))
        #expect(try parse("-0") == .number(-0.0))
    }

    @Test("Escapes: the short ones, \\u, surrogate pairs, and UTF-8 passed through")
    func escapes() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{C}\n\r\t"))
        #expect(try parse(#""\u00e9\u20AC\ud83d\ude00""#) == .string("é€😀"))
        #expect(try parse("\"é€😀 ok\"") == .string("é€😀 ok"))
        #expect(try parse(#"{"na\u006De":"v"}"#) == .object(["name": .string("v")]))
    }

    @Test("Reads what JSONDecoder reads: a provider's discovery document, a key set, claims")
    func sameAsJSONDecoder() throws {
        let texts = [
            #"{"issuer":"https://idp.example","jwks_uri":"https://idp.example/keys","response_types_supported":["code"],"id_token_signing_alg_values_supported":["RS256","ES256"],"claims_supported":["sub","email"],"backchannel_logout_supported":true}"#,
            #"{"keys":[{"kty":"RSA","kid":"a","use":"sig","n":"0vx7agoebGcQSuuPiLJXZpt","e":"AQAB"},{"kty":"EC","crv":"P-256","x":"f83OJ3D2","y":"x_FEzRu9"}]}"#,
            #"{"sub":"248289761001","aud":["client",""],"exp":1311281970,"iat":1311280970.5,"nonce":"n-0S6_WzA2Mj","groups":[],"address":{"country":"DE"},"email_verified":false,"picture":null}"#,
        ]
        for text in texts {
            #expect(try parse(text) == JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)), "\(text)")
        }
    }

    @Test("Refused", arguments: [
        "", " ", "{", "}", "[1,]", "[,1]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{'a':1}", "[1 2]", "01", "1.", ".5", "+1",
        "-", "1e", "1e+", "0x10", "Infinity", "NaN", "nul", "tru", "falsey", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\uZZZZ\"",
        "\"a\nb\"", "\"a\u{1}b\"", "{} {}", "[] x", "1e400", "\u{FEFF}{}",
        #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #""\ud800x""#,
        #"{"sub":"alice","sub":"mallory"}"#, #"{"a":{"b":1,"b":2}}"#,
    ])
    func refused(text: String) {
        #expect(throws: JSONParseError.self, "\(text.debugDescription)") { try parse(text) }
    }

    @Test("Bytes that are not UTF-8 are refused, in names and values")
    func invalidUTF8() {
        for bytes: [UInt8] in [[0x22, 0xC3, 0x28, 0x22], [0x22, 0xFF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
                               [0x7B, 0x22, 0xE2, 0x82, 0x22, 0x3A, 0x31, 0x7D]] {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(bytes) }
        }
    }

    @Test("Nesting is limited; the limit itself is accepted")
    func depth() throws {
        let deepest = String(repeating: "[", count: JSONValue.maximumDepth) + String(repeating: "]", count: JSONValue.maximumDepth)
        #expect(throws: Never.self) { try parse(deepest) }
        let tooDeep = String(repeating: "[", count: JSONValue.maximumDepth + 1) + String(repeating: "]", count: JSONValue.maximumDepth + 1)
        #expect(throws: JSONParseError.self) { try parse(tooDeep) }
        // No recursion on an attacker's brackets: a megabyte of them fails at the limit.
        #expect(throws: JSONParseError.self) { try parse(String(repeating: "{\"a\":", count: 200_000)) }
    }

    @Test("The error says where")
    func offset() {
        do {
            _ = try JSONValue.parse(Array(#"{"a": [1, 2,, 3]}"#.utf8))
            Issue.record("accepted")
        } catch {
            #expect(error.offset == 12)  // the second comma
        }
    }
}
