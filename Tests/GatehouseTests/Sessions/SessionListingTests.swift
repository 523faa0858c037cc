import Foundation
import GatehouseSessions
import Testing

/// Issue 10, item 10: `gatehouse sessions list` must not let a provider-chosen `sub` drive the
/// operator's terminal.
@Suite("sessions list output")
struct SessionListingTests {
    static func summary(sub: String) -> SessionSummary {
        SessionSummary(idPrefix: "0123abcd", sub: sub, createdAt: 1, lastSeenAt: 2, idleExpiresAt: 3, expiresAt: 4)
    }

    static let hostile = ["\u{1b}[2J", "a\u{1b}]0;title\u{07}b", "x\u{9b}31m", "\u{202e}evil", "tab\there\nnewline",
                          "del\u{7f}", "zero\u{200b}width", "tag\u{e0041}", "sep\u{2028}x", "back\\slash"]

    @Test("The table shows no control, format or separator character, one line per session")
    func tableIsTerminalSafe() {
        for sub in Self.hostile {
            let table = SessionListing.table([Self.summary(sub: sub)]) { String($0) }
            #expect(!table.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" && $0 != "\t" }, "\(sub.debugDescription)")
            #expect(!table.unicodeScalars.contains { ($0.value >= 0x7F && $0.value < 0xA0) || $0.properties.generalCategory == .format })
            #expect(table.split(separator: "\n").count == 2)
            #expect(table.split(separator: "\n")[1].split(separator: "\t", omittingEmptySubsequences: false).count == 7)
        }
        #expect(SessionListing.terminalSafe("\u{1b}[2J") == "\\u{1b}[2J")
        #expect(SessionListing.terminalSafe("alice@example.com") == "alice@example.com")
        #expect(SessionListing.terminalSafe("José 山田") == "José 山田")
        #expect(SessionListing.terminalSafe("a\\u{1b}") == "a\\\\u{1b}", "an escape cannot be forged")
    }

    @Test("JSON stays valid, decodes to the exact sub, and carries no raw unsafe character")
    func jsonIsTerminalSafeAndValid() throws {
        let sessions = Self.hostile.map { Self.summary(sub: $0) }
        let text = SessionListing.json(sessions)
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 || ($0.value >= 0x7F && $0.value < 0xA0)
            || $0.properties.generalCategory == .format || $0 == "\u{2028}" })
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
        #expect(decoded.map { $0["sub"] as? String } == Self.hostile)
        #expect(decoded.first?["id"] as? String == "0123abcd")
        #expect(decoded.first?["expiresAt"] as? Int == 4)
    }
}
