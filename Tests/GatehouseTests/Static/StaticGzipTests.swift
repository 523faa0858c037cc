
import HTTP1
import Testing
@testable import GatehouseStatic

@Suite("Static files: gzip through zlib")
struct StaticGzipTests {
    @Test("A compressible file is gzipped when accepted, and decompresses to the original")
    func roundTrip() throws {
        let fixture = try StaticFixture { try $0.write("app.css", staticCompressibleText) }
        let response = fixture.response("/app.css", [("Accept-Encoding", "gzip, deflate, br")])
        #expect(response.status == 200)
        #expect(response.headers["Content-Encoding"] == "gzip")
        #expect(response.headers["Vary"] == "Accept-Encoding")
        #expect(response.headers["Content-Type"] == "text/css; charset=utf-8")
        #expect(response.body.count < staticCompressibleText.utf8.count / 4)
        #expect(Array(response.body.prefix(2)) == [0x1F, 0x8B])  // gzip magic (RFC 1952)
        let original = try #require(staticGunzip(response.body))
        #expect(original == Array(staticCompressibleText.utf8))
        // Compressed once: the second answer is the same bytes from the cache.
        #expect(fixture.response("/app.css", [("Accept-Encoding", "gzip")]).body == response.body)
    }

    @Test("Both variants carry Vary, and their ETags differ (-gz suffix)")
    func varyAndTags() throws {
        let fixture = try StaticFixture { try $0.write("app.js", staticCompressibleText) }
        let plain = fixture.response("/app.js")
        let gzip = fixture.response("/app.js", [("Accept-Encoding", "gzip")])
        #expect(plain.headers["Content-Encoding"] == nil)
        #expect(plain.staticText == staticCompressibleText)
        #expect(plain.headers["Vary"] == "Accept-Encoding")
        #expect(gzip.headers["Vary"] == "Accept-Encoding")
        let plainTag = try #require(plain.headers["ETag"])
        let gzipTag = try #require(gzip.headers["ETag"])
        #expect(gzipTag == String(plainTag.dropLast()) + "-gz\"")
        // Each variant revalidates against its own tag.
        #expect(fixture.response("/app.js", [("Accept-Encoding", "gzip"), ("If-None-Match", gzipTag)]).status == 304)
        #expect(fixture.response("/app.js", [("Accept-Encoding", "gzip"), ("If-None-Match", plainTag)]).status == 200)
        #expect(fixture.response("/app.js", [("If-None-Match", plainTag)]).status == 304)
        let notModified = fixture.response("/app.js", [("Accept-Encoding", "gzip"), ("If-None-Match", gzipTag)])
        #expect(notModified.headers["Vary"] == "Accept-Encoding")
    }

    @Test("Accept-Encoding q-values decide", arguments: [
        ("gzip", true), ("GZIP", true), ("x-gzip", true), ("br;q=1.0, gzip;q=0.5", true), ("*", true),
        ("gzip;q=0", false), ("gzip;q=0.000", false), ("*, gzip;q=0", false), ("identity", false),
        ("deflate, br", false), ("*;q=0", false), ("gzip;q=abc", false), ("", false),
    ])
    func acceptEncoding(value: String, gzip: Bool) {
        #expect(ContentNegotiation.acceptsGzip(HTTPHeaders([("Accept-Encoding", value)])) == gzip)
    }

    @Test("No gzip without Accept-Encoding, or when refused by q=0")
    func notAccepted() throws {
        let fixture = try StaticFixture { try $0.write("data.json", "[" + String(repeating: "1,", count: 1000) + "1]") }
        #expect(fixture.response("/data.json").headers["Content-Encoding"] == nil)
        #expect(fixture.response("/data.json", [("Accept-Encoding", "gzip;q=0, br")]).headers["Content-Encoding"] == nil)
        #expect(fixture.response("/data.json", [("Accept-Encoding", "br, gzip")]).headers["Content-Encoding"] == "gzip")
    }

    @Test("Images, fonts and small files are never gzipped and do not vary")
    func neverCompressed() throws {
        let pngLike = [UInt8](repeating: 0, count: 10_000)
        let fixture = try StaticFixture { files in
            try files.write("logo.png", pngLike)
            try files.write("font.woff2", pngLike)
            try files.write("tiny.css", "a{}")
        }
        for path in ["/logo.png", "/font.woff2", "/tiny.css"] {
            let response = fixture.response(path, [("Accept-Encoding", "gzip")])
            #expect(response.headers["Content-Encoding"] == nil, "\(path)")
            #expect(response.headers["Vary"] == nil, "\(path)")
        }
        #expect(fixture.response("/logo.png", [("Accept-Encoding", "gzip")]).body == pngLike)
    }

    @Test("A changed file is compressed again")
    func recompressAfterChange() throws {
        let fixture = try StaticFixture { try $0.write("app.css", staticCompressibleText) }
        let first = fixture.response("/app.css", [("Accept-Encoding", "gzip")])
        let changed = staticCompressibleText + "/* v2 */"
        try fixture.writer.write("app.css", changed)
        let second = fixture.response("/app.css", [("Accept-Encoding", "gzip")])
        #expect(second.headers["ETag"] != first.headers["ETag"])
        #expect(staticGunzip(second.body) == Array(changed.utf8))
    }

    @Test("Compressible files above the in-memory limit are still gzipped")
    func largeCompressible() throws {
        let text = String(repeating: "export const x = 1;\n", count: 1000)
        let fixture = try StaticFixture(limits: .init(maximumCachedFileSize: 4096)) { try $0.write("big.js", text) }
        let response = fixture.response("/big.js", [("Accept-Encoding", "gzip")])
        #expect(response.headers["Content-Encoding"] == "gzip")
        #expect(staticGunzip(response.body) == Array(text.utf8))
        guard case .file = fixture.request("/big.js") else {
            Issue.record("the identity variant of a large file streams")
            return
        }
    }

    @Test("Gzip output is a valid gzip member for empty input too")
    func gzipEmpty() throws {
        #expect(staticGunzip(try Gzip.compress([])) == [])
    }
}
