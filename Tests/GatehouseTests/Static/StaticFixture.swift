import CZlib
import Foundation
import HTTP1
import Logging
import Testing
@testable import GatehouseStatic

/// A temporary public folder, removed when the fixture goes away.
final class StaticFixture {
    let root: String
    let files: StaticFiles

    init(limits: StaticFiles.Limits = StaticFiles.Limits(), _ populate: (StaticFixture.Writer) throws -> Void) throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-static-\(UUID().uuidString)")
        let rootURL = base.appendingPathComponent("public")
        try FileManager.default.createDirectory(at: rootURL, withIntermediateDirectories: true)
        root = rootURL.path
        try populate(Writer(root: root))
        files = StaticFiles(root: root, logger: staticTestLogger, limits: limits)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent)
    }

    struct Writer {
        let root: String
        /// The folder that contains the public folder (outside of it).
        var outside: String { (root as NSString).deletingLastPathComponent }

        func write(_ path: String, _ text: String) throws { try write(path, Array(text.utf8)) }

        func write(_ path: String, _ bytes: [UInt8]) throws {
            let full = (root as NSString).appendingPathComponent(path)
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
        }

        func writeOutside(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: (outside as NSString).appendingPathComponent(name)))
        }

        func symlink(_ path: String, to destination: String) throws {
            try FileManager.default.createSymbolicLink(atPath: (root as NSString).appendingPathComponent(path),
                                                       withDestinationPath: destination)
        }
    }

    var writer: Writer { Writer(root: root) }

    func request(_ target: String, method: String = "GET", _ headers: [(String, String)] = []) -> StaticAnswer {
        files.respond(to: HTTPRequestHead(method: method, target: target, headers: HTTPHeaders(headers)))
    }

    /// The complete response, failing the test when the answer is a stream.
    func response(_ target: String, method: String = "GET", _ headers: [(String, String)] = [],
                  sourceLocation: SourceLocation = #_sourceLocation) -> HTTPResponse {
        switch request(target, method: method, headers) {
        case .response(let response): return response
        case .file(let head, _, _):
            Issue.record("expected a complete response, got a stream", sourceLocation: sourceLocation)
            return HTTPResponse(status: head.status, headers: head.headers)
        }
    }

    /// Sets a file's modification time (to make a change visible even within one clock tick).
    func touch(_ path: String, seconds: Int) throws {
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: TimeInterval(seconds))],
                                              ofItemAtPath: (root as NSString).appendingPathComponent(path))
    }
}

extension HTTPResponse {
    var staticText: String { String(decoding: body, as: UTF8.self) }
}

/// Independent gunzip through zlib (inflateInit2 with windowBits 31), to check what the server sent.
func staticGunzip(_ input: [UInt8]) -> [UInt8]? {
    var stream = z_stream()
    guard inflateInit2_(&stream, 31, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
    defer { inflateEnd(&stream) }
    var input = input
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    return input.withUnsafeMutableBufferPointer { source -> [UInt8]? in
        stream.next_in = source.baseAddress
        stream.avail_in = uInt(source.count)
        while true {
            let (code, produced) = chunk.withUnsafeMutableBufferPointer { buffer -> (Int32, Int) in
                stream.next_out = buffer.baseAddress
                stream.avail_out = uInt(buffer.count)
                let code = inflate(&stream, Z_NO_FLUSH)
                return (code, buffer.count - Int(stream.avail_out))
            }
            output.append(contentsOf: chunk[..<produced])
            if code == Z_STREAM_END { return output }
            if code != Z_OK { return nil }
        }
    }
}

/// A text that compresses well and is well above the gzip threshold.
let staticCompressibleText = String(repeating: "body { color: rebeccapurple; margin: 0 auto; }\n", count: 100)

/// Tests stay quiet; what is logged is not part of these tests' contract.
let staticTestLogger = Logger(label: "test.static", factory: { _ in SwiftLogNoOpLogHandler() })
