import Foundation
import GatehouseOIDC
import Testing

/// `/user` returns the stored claims as written: `JSONValueWriter` must write exactly what
/// `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` writes, or leave the object to it.
@Suite("JSONValueWriter")
struct JSONValueWriterTests {
    private func encoded(_ object: [String: JSONValue]) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(object))
    }

    @Test("keys in UTF-8 byte order, escapes, numbers and nesting as JSONEncoder writes them")
    func sameBytes() throws {
        let object: [String: JSONValue] = [
            "b": .string("1"), "A": .number(2), "a10": .bool(true), "a9": .bool(false), "_x": .null, "Z": .array([]),
            "a": .object([:]), "é": .string("é"), "e": .string(""), "s\u{301}": .string("combining"), "x-y": .number(-3),
            "x.y": .number(1_732_636_800), "1": .number(0), "10": .number(999_999_999_999_999), "9": .number(-999_999_999_999_999),
            "escapes": .string("a/b\"c\\d\u{0}\u{1}\u{8}\u{9}\u{a}\u{b}\u{c}\u{d}\u{1f}\u{7f}\u{2028}😀"),
            "nested": .array([.object(["z": .number(1), "y": .array([.null, .string("</script>")])]), .bool(true)]),
        ]
        let written = try #require(JSONValueWriter.sortedKeys(object))
        #expect(written == (try encoded(object)), "\(String(decoding: written, as: UTF8.self))")
    }

    @Test("random claims objects: the same bytes as JSONEncoder", arguments: 0..<4)
    func randomObjects(seed: UInt64) throws {
        var generator = SplitMix(seed: seed)
        let alphabet: [Unicode.Scalar] = ["a", "B", "z", "_", "-", ".", "0", "9", "/", "\"", "\\", " ", "\u{0}", "\u{1f}",
                                          "\u{7f}", "é", "ś", "\u{301}", "中", "😀", "\n", "\t"]
        func text() -> String {
            var result = ""
            for _ in 0..<Int(generator.next() % 8) { result.unicodeScalars.append(alphabet[Int(generator.next() % UInt64(alphabet.count))]) }
            return result
        }
        func value(depth: Int) -> JSONValue {
            switch generator.next() % (depth > 2 ? 4 : 6) {
            case 0: return .string(text())
            case 1: return .number(Double(Int64(generator.next() % 2_000_000_000_000) - 1_000_000_000_000))
            case 2: return .bool(generator.next() % 2 == 0)
            case 3: return .null
            case 4: return .array((0..<Int(generator.next() % 4)).map { _ in value(depth: depth + 1) })
            default:
                var members: [String: JSONValue] = [:]
                for _ in 0..<Int(generator.next() % 5) { members[text()] = value(depth: depth + 1) }
                return .object(members)
            }
        }
        for _ in 0..<200 {
            var object: [String: JSONValue] = [:]
            for _ in 0..<Int(generator.next() % 12) { object[text()] = value(depth: 0) }
            let written = try #require(JSONValueWriter.sortedKeys(object))
            #expect(written == (try encoded(object)), "\(String(decoding: written, as: UTF8.self))")
        }
    }

    @Test("numbers it does not write as JSONEncoder surely would are left to JSONEncoder", arguments: [
        1.5, -0.0, 1e15, -1e15, 1e20, 0.1, Double.pi,
    ])
    func leftToJSONEncoder(number: Double) {
        #expect(JSONValueWriter.sortedKeys(["n": .number(number)]) == nil)
        #expect(JSONValueWriter.sortedKeys(["a": .array([.object(["n": .number(number)])])]) == nil)
    }
}

/// A small deterministic generator (the same objects in every run).
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
