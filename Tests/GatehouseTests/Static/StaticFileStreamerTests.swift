import Foundation
import HTTP1
import HTTPServer
import Synchronization
import Testing
@testable import GatehouseStatic

/// Records what a handler wrote.
final class StaticRecordingWriter: HTTPResponseWriter, Sendable {
    struct Record {
        var response: HTTPResponse?
        var head: HTTPResponseHead?
        var contentLength: Int?
        var pieces: [[UInt8]] = []
        var finished = false
        var aborted = false
    }
    let record = Mutex(Record())

    func respond(_ response: HTTPResponse) async { record.withLock { $0.response = response } }
    func writeHead(_ head: HTTPResponseHead, contentLength: Int?) async throws(HTTPWriteError) {
        record.withLock { $0.head = head; $0.contentLength = contentLength }
    }
    func writeBody(_ bytes: [UInt8]) async throws(HTTPWriteError) { record.withLock { $0.pieces.append(bytes) } }
    func finish() async throws(HTTPWriteError) { record.withLock { $0.finished = true } }
    func abort() { record.withLock { $0.aborted = true } }
    var headWritten: Bool { record.withLock { $0.head != nil } }
}

@Suite("Static files: streaming large files")
struct StaticFileStreamerTests {
    private let content = [UInt8]((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    private func file() throws -> (StaticFixture, String) {
        let content = self.content
        let fixture = try StaticFixture { try $0.write("big.bin", content) }
        return (fixture, fixture.root + "/big.bin")
    }

    @Test("The whole file leaves in 64 KiB pieces after a head with its length")
    func whole() async throws {
        let (fixture, path) = try file()
        _ = fixture
        let writer = StaticRecordingWriter()
        await StaticFileStreamer.stream(path: path, range: 0..<content.count, head: HTTPResponseHead(status: 200),
                                        isHEAD: false, to: writer)
        let record = writer.record.withLock { $0 }
        #expect(record.head?.status == 200)
        #expect(record.contentLength == content.count)
        #expect(record.pieces.map(\.count) == [65_536, 65_536, 65_536, 3392])
        #expect(record.pieces.flatMap { $0 } == content)
        #expect(record.finished && !record.aborted)
    }

    @Test("A range sends exactly its bytes")
    func range() async throws {
        let (fixture, path) = try file()
        _ = fixture
        let writer = StaticRecordingWriter()
        await StaticFileStreamer.stream(path: path, range: 70_000..<140_001, head: HTTPResponseHead(status: 206),
                                        isHEAD: false, to: writer)
        let record = writer.record.withLock { $0 }
        #expect(record.contentLength == 70_001)
        #expect(record.pieces.flatMap { $0 } == Array(content[70_000..<140_001]))
    }

    @Test("HEAD sends the head and no body")
    func head() async throws {
        let (fixture, path) = try file()
        _ = fixture
        let writer = StaticRecordingWriter()
        await StaticFileStreamer.stream(path: path, range: 0..<content.count, head: HTTPResponseHead(status: 200),
                                        isHEAD: true, to: writer)
        let record = writer.record.withLock { $0 }
        #expect(record.contentLength == content.count)
        #expect(record.pieces.isEmpty && record.finished)
    }

    @Test("A file that shrank midway aborts instead of sending a short body")
    func shrunk() async throws {
        let (fixture, path) = try file()
        _ = fixture
        let writer = StaticRecordingWriter()
        await StaticFileStreamer.stream(path: path, range: 0..<(content.count + 10), head: HTTPResponseHead(status: 200),
                                        isHEAD: false, to: writer)
        let record = writer.record.withLock { $0 }
        #expect(record.aborted && !record.finished)
    }

    @Test("A vanished file answers 500 JSON")
    func vanished() async throws {
        let writer = StaticRecordingWriter()
        await StaticFileStreamer.stream(path: "/nonexistent/\(UUID().uuidString)", range: 0..<1,
                                        head: HTTPResponseHead(status: 200), isHEAD: false, to: writer)
        #expect(writer.record.withLock { $0.response?.status } == 500)
    }

    @Test("serve(_:to:) answers small files in one write and streams large ones")
    func serveChoosesTheWay() async throws {
        let content = self.content
        let fixture = try StaticFixture(limits: .init(maximumCachedFileSize: 1000)) { files in
            try files.write("big.bin", content)
            try files.write("small.txt", "hi")
        }
        let small = StaticRecordingWriter()
        await fixture.files.serve(HTTPRequestHead(method: "GET", target: "/small.txt"), to: small)
        #expect(small.record.withLock { $0.response?.body } == Array("hi".utf8))

        let big = StaticRecordingWriter()
        await fixture.files.serve(HTTPRequestHead(method: "GET", target: "/big.bin",
                                                  headers: ["Range": "bytes=-100"]), to: big)
        let record = big.record.withLock { $0 }
        #expect(record.head?.status == 206)
        #expect(record.head?.headers["Content-Range"] == "bytes 199900-199999/200000")
        #expect(record.pieces.flatMap { $0 } == Array(content.suffix(100)))
        #expect(record.finished)
    }
}
