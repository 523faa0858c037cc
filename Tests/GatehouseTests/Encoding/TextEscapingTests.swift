import GatehouseEncoding
import Testing

@Suite("Text escaping for pages, logs and terminals")
struct TextEscapingTests {
    @Test("HTML escaping covers the five significant characters")
    func html() {
        #expect(TextEscaping.html(#"<a href="x">'&'</a>"#) == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;")
        #expect(TextEscaping.html("plain é") == "plain é")
    }

    @Test("Control, format and separator characters are escaped; the escapes cannot be forged")
    func controls() {
        #expect(TextEscaping.controlEscaped("a\u{1B}[2Jb") == #"a\u{1b}[2Jb"#)
        #expect(TextEscaping.controlEscaped("l1\nl2\r\tx") == #"l1\nl2\r\tx"#)
        #expect(TextEscaping.controlEscaped("\u{85}\u{7F}\u{202E}\u{2028}") == #"\u{85}\u{7f}\u{202e}\u{2028}"#)
        #expect(TextEscaping.controlEscaped(#"already \u{1b}"#) == #"already \\u{1b}"#)
        #expect(TextEscaping.controlEscaped(#"say "hi""#) == #"say "hi""#)
        #expect(TextEscaping.controlEscaped(#"say "hi""#, escapingQuotes: true) == #"say \"hi\""#)
        #expect(TextEscaping.controlEscaped("naïve 日本") == "naïve 日本")
    }

    @Test("A limit shortens long values")
    func limit() {
        #expect(TextEscaping.controlEscaped(String(repeating: "x", count: 10), limit: 4) == "xxxx…")
        #expect(TextEscaping.controlEscaped("xxxx", limit: 4) == "xxxx")
    }

    @Test("needsControlEscaping says whether a copy is needed")
    func needs() {
        #expect(!TextEscaping.needsControlEscaping("alice@example.com"))
        #expect(TextEscaping.needsControlEscaping("a\\b"))
        #expect(TextEscaping.needsControlEscaping("\u{200B}"))
    }
}
