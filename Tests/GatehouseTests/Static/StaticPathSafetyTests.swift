import Foundation

import Testing
@testable import GatehouseStatic

@Suite("Static files: paths never leave the public folder")
struct StaticPathSafetyTests {
    private func fixture() throws -> StaticFixture {
        try StaticFixture { files in
            try files.write("index.html", "<h1>app</h1>")
            try files.write("a/b.txt", "b")
            try files.writeOutside("secret.txt", "TOP SECRET")
            try files.symlink("leak.txt", to: files.outside + "/secret.txt")
            try files.symlink("leakdir", to: files.outside)
            try files.symlink("inside.txt", to: files.root + "/a/b.txt")
            try files.write(".env", "SECRET=1")
        }
    }

    @Test("Traversal attempts answer 404 and never the secret, even for HTML navigations", arguments: [
        "/../secret.txt", "/../../../../etc/passwd", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/.%2e/secret.txt",
        "/..%2fsecret.txt", "/a%2f..%2f..%2fsecret.txt", "/%2e%2e%5csecret.txt", "/a/../../secret.txt",
        "/a/../index.html", "/\\..\\secret.txt", "/..\\secret.txt", "/a%5cb.txt", "/%00", "/index.html%00.txt",
        "/a/b.txt%00", "/leak.txt", "/leakdir/secret.txt", "/.env", "/%2eenv",
        "/a/%0a", "/%7f",
    ])
    func traversal(target: String) throws {
        let fixture = try fixture()
        for accept in ["*/*", "text/html"] {
            let response = fixture.response(target, [("Accept", accept)])
            #expect(response.status == 404, "\(target) with Accept \(accept)")
            #expect(!response.staticText.contains("SECRET"))
            #expect(response.headers["Content-Type"] == "application/json")
            #expect(response.staticText.contains(#""error":"not_found""#))
        }
    }

    @Test("Malformed percent-encodings answer 400", arguments: [
        "/%", "/abc%", "/%2", "/%zz", "/%g0", "/a%2", "/%c3%28", "/%ff", "/%e2%82",
    ])
    func malformed(target: String) throws {
        let response = try fixture().response(target)
        #expect(response.status == 400)
        #expect(response.staticText.contains(#""error":"invalid_request""#))
    }

    @Test("Hostile inputs never crash", arguments: [
        "/" + String(repeating: "a", count: 100_000), "/" + String(repeating: "%41", count: 5000),
        "/" + String(repeating: "a/", count: 3000), "/" + String(repeating: "x", count: 300) + ".js",
        "", "*", "http://example.com/index.html", "/%%%%", "/%u002e%u002e/", "/\u{FEFF}..", "/..;/secret.txt",
    ])
    func hostile(target: String) throws {
        let response = try fixture().response(target)
        #expect([400, 404].contains(response.status), "\(target.prefix(40))")
        #expect(!response.staticText.contains("SECRET"))
    }

    @Test("Symlinks that stay inside the folder are served")
    func insideSymlink() throws {
        #expect(try fixture().response("/inside.txt").staticText == "b")
    }

    @Test("A symlink re-pointed outside after being cached is refused")
    func repointedSymlink() throws {
        let fixture = try fixture()
        #expect(fixture.response("/inside.txt").status == 200)
        let link = fixture.root + "/inside.txt"
        try FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link,
                                                   withDestinationPath: fixture.writer.outside + "/secret.txt")
        #expect(fixture.response("/inside.txt").status == 404)
    }

    @Test("Percent-encoded names that stay inside are decoded and served")
    func encodedNames() throws {
        let fixture = try StaticFixture { files in
            try files.write("hello world.txt", "spaces")
            try files.write("café.txt", "accent")
            try files.write("a+b.txt", "plus")
            try files.write(".well-known/security.txt", "contact")
        }
        #expect(fixture.response("/hello%20world.txt").staticText == "spaces")
        #expect(fixture.response("/caf%C3%A9.txt").staticText == "accent")
        #expect(fixture.response("/a+b.txt").staticText == "plus")
        #expect(fixture.response("/./a+b.txt").staticText == "plus")
        #expect(fixture.response("//a+b.txt").staticText == "plus")
        #expect(fixture.response("/.well-known/security.txt").staticText == "contact")
    }

    @Test("Request path parsing, segment by segment")
    func parsing() throws {
        #expect(try RequestPath.parse("/").segments == [])
        #expect(try RequestPath.parse("/a//b/./c").segments == ["a", "b", "c"])
        #expect(throws: PathRefusal.malformedEncoding) { try RequestPath.parse("relative") }
        #expect(throws: PathRefusal.forbidden(reason: "encoded slash")) { try RequestPath.parse("/a%2Fb") }
        #expect(throws: PathRefusal.forbidden(reason: "dot-dot segment")) { try RequestPath.parse("/a/%2e%2E") }
    }
}
