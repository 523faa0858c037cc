
import Testing
@testable import GatehouseStatic

@Suite("Static files: byte ranges (RFC 9110 §14)")
struct StaticRangeTests {
    private static let digits = "0123456789"

    private func fixture() throws -> StaticFixture {
        let fixture = try StaticFixture { try $0.write("digits.txt", Self.digits) }
        try fixture.touch("digits.txt", seconds: 1_700_000_000)
        return fixture
    }

    @Test("Satisfiable ranges answer 206 with Content-Range", arguments: [
        ("bytes=0-3", "0123", "bytes 0-3/10"), ("bytes=7-", "789", "bytes 7-9/10"),
        ("bytes=-2", "89", "bytes 8-9/10"), ("bytes=5-100", "56789", "bytes 5-9/10"),
        ("bytes=-50", "0123456789", "bytes 0-9/10"), ("bytes=9-9", "9", "bytes 9-9/10"),
        ("BYTES=2-3", "23", "bytes 2-3/10"),
    ])
    func partial(range: String, body: String, contentRange: String) throws {
        let response = try fixture().response("/digits.txt", [("Range", range)])
        #expect(response.status == 206)
        #expect(response.staticText == body)
        #expect(response.headers["Content-Range"] == contentRange)
    }

    @Test("Unsatisfiable ranges answer 416 with bytes */length", arguments: [
        "bytes=10-", "bytes=10-20", "bytes=-0", "bytes=99999999999999999999999-",
    ])
    func unsatisfiable(range: String) throws {
        let response = try fixture().response("/digits.txt", [("Range", range)])
        #expect(response.status == 416)
        #expect(response.headers["Content-Range"] == "bytes */10")
    }

    @Test("Unusable Range fields are ignored: 200 with the whole file", arguments: [
        "bytes=0-1,3-4", "items=0-1", "bytes=5-2", "bytes=a-b", "bytes=", "bytes=-", "0-1", "bytes=--1",
    ])
    func ignored(range: String) throws {
        let response = try fixture().response("/digits.txt", [("Range", range)])
        #expect(response.status == 200)
        #expect(response.staticText == Self.digits)
    }

    @Test("If-Range: the current strong tag or exact date allows the range, anything else sends the whole file")
    func ifRange() throws {
        let fixture = try fixture()
        let tag = try #require(fixture.response("/digits.txt").headers["ETag"])
        #expect(fixture.response("/digits.txt", [("Range", "bytes=0-1"), ("If-Range", tag)]).status == 206)
        #expect(fixture.response("/digits.txt", [("Range", "bytes=0-1"), ("If-Range", "W/" + tag)]).status == 200)
        #expect(fixture.response("/digits.txt", [("Range", "bytes=0-1"), ("If-Range", "\"old\"")]).status == 200)
        #expect(fixture.response("/digits.txt", [("Range", "bytes=0-1"),
                                                 ("If-Range", "Tue, 14 Nov 2023 22:13:20 GMT")]).status == 206)
        #expect(fixture.response("/digits.txt", [("Range", "bytes=0-1"),
                                                 ("If-Range", "Tue, 14 Nov 2023 22:13:21 GMT")]).status == 200)
    }

    @Test("A range is served from the identity bytes even when gzip is accepted")
    func rangeNotOnGzip() throws {
        let fixture = try StaticFixture { try $0.write("app.css", staticCompressibleText) }
        let response = fixture.response("/app.css", [("Range", "bytes=0-3"), ("Accept-Encoding", "gzip")])
        #expect(response.status == 206)
        #expect(response.headers["Content-Encoding"] == nil)
        #expect(response.staticText == String(staticCompressibleText.prefix(4)))
    }

    @Test("HEAD ignores Range (ranges are defined for GET only)")
    func headIgnoresRange() throws {
        let response = try fixture().response("/digits.txt", method: "HEAD", [("Range", "bytes=0-1")])
        #expect(response.status == 200)
        #expect(response.headers["Content-Length"] == "10")
    }

    @Test("An empty file cannot satisfy any range")
    func emptyFile() throws {
        let fixture = try StaticFixture { try $0.write("empty.txt", "") }
        #expect(fixture.response("/empty.txt", [("Range", "bytes=0-")]).status == 416)
        #expect(fixture.response("/empty.txt", [("Range", "bytes=-5")]).status == 416)
        #expect(fixture.response("/empty.txt").status == 200)
    }
}
