import GatehouseEncoding
import TestSupport
import Testing
@testable import GatehouseStatic

/// `RequestPath.parse` walks segments in place and decodes only those with a `%`. It must refuse
/// and accept exactly what the plain reading did: split on `/` (empty segments dropped), decode
/// every segment, then check it. That reading is kept here as the reference.
@Suite("Static files: request paths read in place")
struct RequestPathScanTests {
    static func reference(_ rawPath: Substring) -> Result<RequestPath, PathRefusal> {
        let raw = Array(rawPath.utf8)
        guard raw.first == UInt8(ascii: "/") else { return .failure(.malformedEncoding) }
        guard raw.count <= RequestPath.maximumLength else { return .failure(.forbidden(reason: "path too long")) }
        var segments: [String] = []
        for rawSegment in raw.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            guard let bytes = PercentEncoding.decode(bytes: rawSegment) else { return .failure(.malformedEncoding) }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "/"): return .failure(.forbidden(reason: "encoded slash"))
                case UInt8(ascii: "\\"): return .failure(.forbidden(reason: "backslash"))
                case 0: return .failure(.forbidden(reason: "NUL byte"))
                case ..<0x20, 0x7F: return .failure(.forbidden(reason: "control character"))
                default: continue
                }
            }
            guard let segment = String(validating: bytes, as: UTF8.self) else { return .failure(.malformedEncoding) }
            if segment == "." { continue }
            if segment == ".." { return .failure(.forbidden(reason: "dot-dot segment")) }
            if segment.hasPrefix(".") && segment != ".well-known" { return .failure(.forbidden(reason: "dot-file")) }
            guard bytes.count <= RequestPath.maximumSegmentLength else { return .failure(.forbidden(reason: "name too long")) }
            segments.append(segment)
        }
        return .success(RequestPath(segments: segments))
    }

    static func parsed(_ rawPath: Substring) -> Result<RequestPath, PathRefusal> {
        do { return .success(try RequestPath.parse(rawPath)) } catch { return .failure(error) }
    }

    @Test("Random paths over the characters that matter give the reference's answer")
    func randomPaths() {
        let pieces = ["/", "/", "a", "b", ".", "..", "%", "%2", "%2e", "%2E", "%2f", "%2F", "%5c", "%00", "%1f", "%7F",
                      "%C3%A9", "%C3", "%FF", "é", "\\", "~", "+", " ", ".well-known", "%zz", "//", "index.html"]
        var generator = SplitMix64(seed: 0x9a7e_5eed)
        for _ in 0..<20_000 {
            var path = (0..<Int.random(in: 0...10, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            if Int.random(in: 0..<8, using: &generator) != 0 { path = "/" + path }
            #expect(Self.parsed(path[...]) == Self.reference(path[...]), "\(path)")
        }
    }

    @Test("Long segments and paths: the limits give the reference's answer")
    func limits() {
        for path in ["/" + String(repeating: "a", count: 255), "/" + String(repeating: "a", count: 256),
                     "/" + String(repeating: "%61", count: 255), "/" + String(repeating: "%61", count: 256),
                     "/" + String(repeating: "a/", count: 2047), "/" + String(repeating: "a/", count: 2048)] {
            #expect(Self.parsed(path[...]) == Self.reference(path[...]), "\(path.prefix(40))… (\(path.utf8.count) bytes)")
        }
    }
}
