import Testing
@testable import Gatehouse

/// The callback's query and form bodies are split on their bytes (`&`, `=`), as a URL parser does.
@Suite("QueryParameters")
struct QueryParametersTests {
    @Test("pairs split at & and the first =, + and %XX decoded, malformed values nil, empty parts skipped")
    func pairs() {
        let query = QueryParameters("code=a%2Bb+c&state=x=y&&empty=&flag&bad=%zz&%E2%9C%93=%C3%A9")
        #expect(query.pairs.map(\.name) == ["code", "state", "empty", "flag", "bad", "✓"])
        #expect(query.pairs.map(\.value) == ["a+b c", "x=y", "", "", nil, "é"])
        #expect(query.single("code") == "a+b c")
        #expect(QueryParameters(nil).pairs.isEmpty && QueryParameters("").pairs.isEmpty)
    }

    @Test("a name that is not UTF-8 once decoded drops its pair; a combining mark after & still splits")
    func bytes() {
        let query = QueryParameters("%FF=1&a=2&\u{301}b=3")
        #expect(query.pairs.map(\.name) == ["a", "\u{301}b"])
        #expect(query.single("a") == "2")
    }

    @Test("repeated parameters are not single (RFC 6749 §3.1)")
    func repeated() {
        let query = QueryParameters("state=1&state=2")
        #expect(query.single("state") == nil && query.count("state") == 2 && query.contains("state"))
    }
}

/// The session cache remembers recent cookie values by their bytes.
@Suite("SessionCookieKey")
struct SessionCookieKeyTests {
    @Test("43 bytes only; equal exactly when the bytes are; usable as a dictionary key")
    func key() throws {
        func key(_ text: String) -> SessionCookieKey? { Array(text.utf8).withUnsafeBufferPointer { SessionCookieKey($0) } }
        let value = String(repeating: "A", count: 42) + "E"
        let a = try #require(key(value))
        let b = try #require(key(String(("x" + value).dropFirst())))
        let c = try #require(key(String(repeating: "A", count: 42) + "I"))
        #expect(a == b && a != c)
        #expect(key(String(value.dropLast())) == nil)
        #expect(key(value + "A") == nil)
        var seen: [SessionCookieKey: Int] = [a: 1]
        seen[c] = 2
        #expect(seen[b] == 1 && seen.count == 2)
    }
}
