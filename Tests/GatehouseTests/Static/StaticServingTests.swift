import Foundation
import HTTP1
import Testing
@testable import GatehouseStatic

@Suite("Static files: serving, MIME types, cache policy")
struct StaticServingTests {
    @Test("/ and folders answer their index.html, as no-cache HTML")
    func rootAndDirectoryIndex() throws {
        let fixture = try StaticFixture { files in
            try files.write("index.html", "<h1>home</h1>")
            try files.write("docs/index.html", "<h1>docs</h1>")
        }
        let home = fixture.response("/")
        #expect(home.status == 200)
        #expect(home.staticText == "<h1>home</h1>")
        #expect(home.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(home.headers["Cache-Control"] == "no-cache")
        #expect(fixture.response("/docs/").staticText == "<h1>docs</h1>")
        #expect(fixture.response("/docs").staticText == "<h1>docs</h1>")
        #expect(fixture.response("/index.html?v=1").staticText == "<h1>home</h1>")
    }

    @Test("Content-Type follows the extension", arguments: [
        ("a.html", "text/html; charset=utf-8"), ("a.css", "text/css; charset=utf-8"),
        ("a.js", "text/javascript; charset=utf-8"), ("a.mjs", "text/javascript; charset=utf-8"),
        ("a.json", "application/json"), ("a.js.map", "application/json"), ("a.svg", "image/svg+xml"),
        ("a.png", "image/png"), ("a.jpg", "image/jpeg"), ("a.JPEG", "image/jpeg"), ("a.gif", "image/gif"),
        ("a.webp", "image/webp"), ("a.avif", "image/avif"), ("a.ico", "image/x-icon"), ("a.woff", "font/woff"),
        ("a.woff2", "font/woff2"), ("a.ttf", "font/ttf"), ("a.txt", "text/plain; charset=utf-8"),
        ("a.xml", "application/xml"), ("a.wasm", "application/wasm"), ("a.pdf", "application/pdf"),
        ("site.webmanifest", "application/manifest+json"), ("a.unknown", "application/octet-stream"),
        ("README", "application/octet-stream"),
    ])
    func contentTypes(name: String, expected: String) throws {
        let fixture = try StaticFixture { try $0.write(name, "x") }
        let response = fixture.response("/\(name)")
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == expected)
    }

    @Test("Fingerprinted assets are immutable, other assets revalidate")
    func cacheControl() throws {
        let fixture = try StaticFixture { files in
            try files.write("assets/app.3f9a1c2b.js", "1")
            try files.write("assets/index-BdX3kP9q.css", "2")
            try files.write("app.js", "3")
            try files.write("main.application.js", "4")
        }
        let immutable = "public, max-age=31536000, immutable"
        #expect(fixture.response("/assets/app.3f9a1c2b.js").headers["Cache-Control"] == immutable)
        #expect(fixture.response("/assets/index-BdX3kP9q.css").headers["Cache-Control"] == immutable)
        #expect(fixture.response("/app.js").headers["Cache-Control"] == "no-cache")
        #expect(fixture.response("/main.application.js").headers["Cache-Control"] == "no-cache")
    }

    @Test("Fingerprint recognition", arguments: [
        ("app.3f9a1c2b.js", true), ("app.3F9A1C2B0D.css", true), ("chunk-BdX3kP9q.js", true),
        ("vendor.a1b2c3d4e5f6a7b8c9d0.js", true), ("logo.8f2c_1-Zz.svg", true), ("index-Ab-cD_eF.js", true),
        ("app.js", false), ("app.1234567.js", false), ("main.application.js", false),
        ("my-component-settings.js", false), ("jquery-3.7.1.min.js", false), ("index.html", false),
        (".3f9a1c2b.js", false),
    ])
    func fingerprints(name: String, expected: Bool) {
        #expect(CachePolicy.isFingerprinted(name) == expected)
    }

    @Test("HTML is never immutable, even with a hash in its name")
    func htmlAlwaysRevalidates() {
        #expect(CachePolicy.cacheControl(fileName: "page.3f9a1c2b.html",
                                         mediaType: MediaType.forFile(named: "page.3f9a1c2b.html")) == "no-cache")
    }

    @Test("HEAD has the headers and Content-Length of GET, and no body")
    func head() throws {
        let fixture = try StaticFixture { try $0.write("app.css", staticCompressibleText) }
        let get = fixture.response("/app.css")
        let head = fixture.response("/app.css", method: "HEAD")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers["Content-Length"] == "\(staticCompressibleText.utf8.count)")
        #expect(head.headers["ETag"] == get.headers["ETag"])
        #expect(head.headers["Content-Type"] == "text/css; charset=utf-8")
        let gzipHead = fixture.response("/app.css", method: "HEAD", [("Accept-Encoding", "gzip")])
        let gzipGet = fixture.response("/app.css", [("Accept-Encoding", "gzip")])
        #expect(gzipHead.headers["Content-Encoding"] == "gzip")
        #expect(gzipHead.headers["Content-Length"] == "\(gzipGet.body.count)")
        #expect(gzipHead.body.isEmpty)
    }

    @Test("Methods other than GET and HEAD get 405 JSON with Allow", arguments: ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "get"])
    func methodNotAllowed(method: String) throws {
        let fixture = try StaticFixture { try $0.write("index.html", "x") }
        let response = fixture.response("/index.html", method: method)
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "GET, HEAD")
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(response.staticText.contains(#""error":"method_not_allowed""#))
    }

    @Test("A changed file is served at once, with a new ETag (no restart, no stale cache)")
    func changeOnDiskIsPickedUp() throws {
        let fixture = try StaticFixture { try $0.write("app.js", "console.log(1)") }
        let first = fixture.response("/app.js")
        #expect(first.staticText == "console.log(1)")
        // Same size, different content: only the modification time tells them apart.
        try fixture.writer.write("app.js", "console.log(2)")
        try fixture.touch("app.js", seconds: 1_700_000_000)
        let second = fixture.response("/app.js")
        #expect(second.staticText == "console.log(2)")
        #expect(second.headers["ETag"] != first.headers["ETag"])
        #expect(second.headers["Last-Modified"] == "Tue, 14 Nov 2023 22:13:20 GMT")
        // A different size is noticed too, and so is a deletion.
        try fixture.writer.write("app.js", "console.log('longer')")
        #expect(fixture.response("/app.js").staticText == "console.log('longer')")
        try FileManager.default.removeItem(atPath: fixture.root + "/app.js")
        #expect(fixture.response("/app.js").status == 404)
    }

    @Test("A missing public folder answers 404 rather than failing")
    func missingRoot() {
        let files = StaticFiles(root: "/nonexistent/gatehouse-\(UUID().uuidString)", logger: staticTestLogger)
        #expect(files.root == nil)
        guard case .response(let response) = files.respond(to: HTTPRequestHead(method: "GET", target: "/")) else {
            Issue.record("expected a response")
            return
        }
        #expect(response.status == 404)
    }

    @Test("A relative root is resolved once")
    func relativeRoot() throws {
        let fixture = try StaticFixture { try $0.write("index.html", "hi") }
        // Relative to the working directory without changing it (tests run in parallel): climb to `/`.
        let depth = FileManager.default.currentDirectoryPath.split(separator: "/").count
        let relative = String(repeating: "../", count: depth) + fixture.root.dropFirst()
        let files = StaticFiles(root: relative, logger: staticTestLogger)
        #expect(files.root == FileSystem.realPath(fixture.root))
        guard case .response(let response) = files.respond(to: HTTPRequestHead(method: "GET", target: "/")) else {
            Issue.record("expected a response")
            return
        }
        #expect(response.staticText == "hi")
    }

    @Test("Large files stream from disk in the range asked for")
    func largeFilesStream() throws {
        let big = [UInt8]((0..<5000).map { UInt8(truncatingIfNeeded: $0) })
        let fixture = try StaticFixture(limits: .init(maximumCachedFileSize: 1000)) { try $0.write("video.mp4", big) }
        guard case .file(let head, let path, let range) = fixture.request("/video.mp4") else {
            Issue.record("expected a stream")
            return
        }
        #expect(head.status == 200)
        #expect(range == 0..<5000)
        #expect(path == FileSystem.realPath(fixture.root + "/video.mp4"))
        #expect(head.headers["Content-Type"] == "video/mp4")
        #expect(head.headers["Content-Length"] == nil)  // the streamer's writeHead sets it
        guard case .file(let partialHead, _, let partial) = fixture.request("/video.mp4", [("Range", "bytes=100-")]) else {
            Issue.record("expected a stream")
            return
        }
        #expect(partialHead.status == 206)
        #expect(partial == 100..<5000)
        #expect(partialHead.headers["Content-Range"] == "bytes 100-4999/5000")
        let head2 = fixture.response("/video.mp4", method: "HEAD")
        #expect(head2.headers["Content-Length"] == "5000")
    }
}
