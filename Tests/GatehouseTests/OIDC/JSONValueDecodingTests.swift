import Foundation
import GatehouseOIDC
import Testing

/// `JSONValue` tries the kinds in order of frequency (login CPU): each JSON kind must still land in
/// its own case, whatever the order.
@Suite("JSONValue decoding")
struct JSONValueDecodingTests {
    @Test("every kind decodes to its own case; 0 and 1 stay numbers, true and false stay booleans")
    func kinds() throws {
        let json = #"{"s":"1","n":1,"z":0,"f":1.5,"t":true,"b":false,"x":null,"a":[1,"1",true,null,{"k":[]}],"o":{"e":{}}}"#
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8))
        #expect(value == .object([
            "s": .string("1"), "n": .number(1), "z": .number(0), "f": .number(1.5), "t": .bool(true), "b": .bool(false),
            "x": .null, "a": .array([.number(1), .string("1"), .bool(true), .null, .object(["k": .array([])])]),
            "o": .object(["e": .object([:])]),
        ]))
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data("[]".utf8)) == .array([]))
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data("\"\"".utf8)) == .string(""))
        #expect(throws: (any Error).self) { try JSONDecoder().decode(JSONValue.self, from: Data("{\"a\":}".utf8)) }
    }

    @Test("encoding and decoding again gives the same value")
    func roundTrip() throws {
        let value = JSONValue.object(["groups": .array([.string("a"), .string("b")]), "email_verified": .bool(true),
                                      "exp": .number(1_700_000_000), "nested": .object(["n": .null])])
        #expect(try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value)) == value)
    }
}
