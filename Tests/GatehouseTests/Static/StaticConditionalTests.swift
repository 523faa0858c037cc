
import Testing
@testable import GatehouseStatic

@Suite("Static files: validators and 304 (RFC 9110 §13)")
struct StaticConditionalTests {
    private func fixture() throws -> StaticFixture {
        let fixture = try StaticFixture { try $0.write("app.js", "console.log('hello')") }
        try fixture.touch("app.js", seconds: 1_700_000_000)
        return fixture
    }

    @Test("Strong ETag and IMF-fixdate Last-Modified on 200")
    func validators() throws {
        let response = try fixture().response("/app.js")
        let tag = try #require(response.headers["ETag"])
        #expect(tag.hasPrefix("\"") && tag.hasSuffix("\"") && !tag.hasPrefix("W/"))
        #expect(tag.hasPrefix("\"14-"))  // size 20 in hex
        #expect(response.headers["Last-Modified"] == "Tue, 14 Nov 2023 22:13:20 GMT")
        #expect(response.headers["Accept-Ranges"] == "bytes")
    }

    @Test("If-None-Match with the current tag, in a list, weak, or * answers 304", arguments: [
        "{tag}", "\"other\", {tag}", "W/{tag}", "*", "\"a,b\" ,{tag}",
    ])
    func noneMatchHits(template: String) throws {
        let fixture = try fixture()
        let tag = try #require(fixture.response("/app.js").headers["ETag"])
        let value = template.replacingOccurrences(of: "{tag}", with: tag)
        let response = fixture.response("/app.js", [("If-None-Match", value)])
        #expect(response.status == 304)
        #expect(response.body.isEmpty)
        #expect(response.headers["ETag"] == tag)
        #expect(response.headers["Cache-Control"] == "no-cache")
    }

    @Test("If-None-Match with another tag answers 200 with the body")
    func noneMatchMisses() throws {
        let response = try fixture().response("/app.js", [("If-None-Match", "\"14-0\", W/\"nope\"")])
        #expect(response.status == 200)
        #expect(response.staticText == "console.log('hello')")
    }

    @Test("If-Modified-Since at or after Last-Modified answers 304, before answers 200")
    func modifiedSince() throws {
        let fixture = try fixture()
        #expect(fixture.response("/app.js", [("If-Modified-Since", "Tue, 14 Nov 2023 22:13:20 GMT")]).status == 304)
        #expect(fixture.response("/app.js", [("If-Modified-Since", "Wed, 15 Nov 2023 00:00:00 GMT")]).status == 304)
        #expect(fixture.response("/app.js", [("If-Modified-Since", "Tue, 14 Nov 2023 22:13:19 GMT")]).status == 200)
        #expect(fixture.response("/app.js", [("If-Modified-Since", "not a date")]).status == 200)
        // The obsolete formats a recipient must still read (RFC 9110 §5.6.7).
        #expect(fixture.response("/app.js", [("If-Modified-Since", "Tuesday, 14-Nov-23 22:13:20 GMT")]).status == 304)
        #expect(fixture.response("/app.js", [("If-Modified-Since", "Tue Nov 14 22:13:20 2023")]).status == 304)
    }

    @Test("If-None-Match takes precedence over If-Modified-Since (RFC 9110 §13.2.2)")
    func noneMatchWins() throws {
        let fixture = try fixture()
        let tag = try #require(fixture.response("/app.js").headers["ETag"])
        // A stale tag with a fresh date: the tag decides, so the body comes back.
        #expect(fixture.response("/app.js", [("If-None-Match", "\"stale\""),
                                             ("If-Modified-Since", "Wed, 15 Nov 2023 00:00:00 GMT")]).status == 200)
        // A current tag with an old date: still 304.
        #expect(fixture.response("/app.js", [("If-None-Match", tag),
                                             ("If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT")]).status == 304)
    }

    @Test("HEAD honours If-None-Match too")
    func headConditional() throws {
        let fixture = try fixture()
        let tag = try #require(fixture.response("/app.js").headers["ETag"])
        #expect(fixture.response("/app.js", method: "HEAD", [("If-None-Match", tag)]).status == 304)
    }

    @Test("HTTP dates: format and parse agree, and errors are nil", arguments: [
        (Int64(0), "Thu, 01 Jan 1970 00:00:00 GMT"), (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"), (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
    ])
    func httpDates(seconds: Int64, text: String) {
        #expect(HTTPDate.format(seconds) == text)
        #expect(HTTPDate.parse(text) == seconds)
    }

    @Test("Malformed HTTP dates are nil", arguments: [
        "", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 99999999999999999999 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, +6 Nov 1994 08:49:37 GMT",
    ])
    func badDates(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test("Entity-tag lists keep quoted commas together")
    func tagList() {
        #expect(EntityTag.list(#""a,b", W/"c" ,*"#) == [#""a,b""#, #"W/"c""#, "*"])
        #expect(EntityTag.gzipVariant(of: #""1f-2a""#) == #""1f-2a-gz""#)
    }
}
