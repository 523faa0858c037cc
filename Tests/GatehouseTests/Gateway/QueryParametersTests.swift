import GatehouseSessions
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

/// The memo maps a cookie value's bytes to its session id, one slot per value.
@Suite("SessionIDMemo")
struct SessionIDMemoTests {
    private func key(_ id: SessionID) -> SessionCookieKey {
        Array(id.cookieValue.utf8).withUnsafeBufferPointer { SessionCookieKey($0)! }
    }

    @Test("a remembered value is found again; an unknown one, or one pushed out of its slot, is not")
    func remembers() {
        let seed: UInt64 = 0x5eed_1234_abcd_0001
        var memo = SessionIDMemo(seed: seed)
        let ids = (0..<256).map { _ in SessionID.generate() }
        for id in ids { memo.remember(id, for: key(id)) }
        // Each value is found exactly when no later one took its slot, and then as its own id.
        let slots = ids.map { key($0).slotIndex(seed: seed, count: SessionIDMemo.slotCount) }
        for (index, id) in ids.enumerated() {
            let overwritten = slots[(index + 1)...].contains(slots[index])
            #expect(memo.id(for: key(id)) == (overwritten ? nil : id))
        }
        #expect(memo.id(for: key(SessionID.generate())) == nil)
    }

    @Test("values that share a slot replace each other and are never mistaken for each other")
    func collisions() {
        // Seed 1 and a table of 4096 slots: find two values for one slot.
        var memo = SessionIDMemo(seed: 1)
        var bySlot: [Int: SessionID] = [:]
        var pair: (SessionID, SessionID)?
        while pair == nil {
            let id = SessionID.generate()
            let slot = key(id).slotIndex(seed: 1, count: SessionIDMemo.slotCount)
            if let other = bySlot[slot] { pair = (other, id) } else { bySlot[slot] = id }
        }
        let (first, second) = pair!
        memo.remember(first, for: key(first))
        #expect(memo.id(for: key(second)) == nil)
        memo.remember(second, for: key(second))
        #expect(memo.id(for: key(second)) == second && memo.id(for: key(first)) == nil)
    }
}

/// The session cache's key: equal by bytes, hashed from the hex hash's prefix.
@Suite("SessionHashKey")
struct SessionHashKeyTests {
    @Test("equal keys hash alike, in a dictionary too; short and non-hex ids work as keys")
    func keys() {
        let ids = (0..<200).map { _ in SessionID.generate().hash } + ["", "abc", "é", "e\u{301}"]
        var table: [SessionHashKey: Int] = [:]
        for (index, id) in ids.enumerated() { table[SessionHashKey(id)] = index }
        #expect(table.count == ids.count)
        for (index, id) in ids.enumerated() {
            // A copy of the text with its own storage.
            let copy = String(decoding: Array(id.utf8), as: UTF8.self)
            #expect(table[SessionHashKey(copy)] == index)
            #expect(SessionHashKey(copy).hashValue == SessionHashKey(id).hashValue)
        }
        // Canonically equivalent but different bytes: different keys.
        #expect(SessionHashKey("é") != SessionHashKey("e\u{301}"))
        table[SessionHashKey(ids[0])] = nil
        #expect(table.count == ids.count - 1 && table[SessionHashKey(ids[1])] == 1)
    }
}

