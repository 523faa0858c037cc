
import Testing
@testable import GatehouseStatic

@Suite("Static files: SPA fallback for client-side routes")
struct StaticSPAFallbackTests {
    private func fixture() throws -> StaticFixture {
        try StaticFixture { files in
            try files.write("index.html", "<div id=app></div>")
            try files.write("app.js", "1")
        }
    }

    @Test("A navigation (Accept names text/html) to an unknown path gets index.html, no-cache")
    func navigationFallsBack() throws {
        let accept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
        let response = try fixture().response("/orders/42?tab=items", [("Accept", accept)])
        #expect(response.status == 200)
        #expect(response.staticText == "<div id=app></div>")
        #expect(response.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(response.headers["Cache-Control"] == "no-cache")
        #expect(response.headers["Vary"]?.contains("Accept") == true)
    }

    @Test("Without an explicit text/html the unknown path is a 404 JSON", arguments: [
        "*/*", "text/*", "application/json", "text/html;q=0", "", "image/avif,image/webp,*/*",
    ])
    func noFallback(accept: String) throws {
        let response = try fixture().response("/missing.js", [("Accept", accept)])
        #expect(response.status == 404)
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(response.staticText == #"{"error":"not_found","error_description":"No file at this path."}"#)
        #expect(response.headers["Vary"] == "Accept")
    }

    @Test("No Accept header at all: 404")
    func noAccept() throws {
        #expect(try fixture().response("/orders/42").status == 404)
    }

    @Test("The fallback revalidates like index.html itself")
    func fallbackConditional() throws {
        let fixture = try fixture()
        let tag = try #require(fixture.response("/index.html").headers["ETag"])
        #expect(fixture.response("/deep/link", [("Accept", "text/html"), ("If-None-Match", tag)]).status == 304)
    }

    @Test("No fallback when there is no index.html")
    func noIndex() throws {
        let fixture = try StaticFixture { try $0.write("app.js", "1") }
        #expect(fixture.response("/route", [("Accept", "text/html")]).status == 404)
        #expect(fixture.response("/", [("Accept", "text/html")]).status == 404)
    }

    @Test("HEAD of a client-side route falls back too")
    func headFallback() throws {
        let response = try fixture().response("/route", method: "HEAD", [("Accept", "text/html")])
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        #expect(response.headers["Content-Length"] == "18")
    }
}
