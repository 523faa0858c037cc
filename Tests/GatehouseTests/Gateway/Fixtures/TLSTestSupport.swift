import Crypto
import EventLoops
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
@testable import Gatehouse
import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import GatehouseStatic
import HTTPClient
import HTTP1
import HTTPServer
import Logging
import Synchronization
import Testing

enum TLSTestError: Error, CustomStringConvertible {
    case setup(String)
    var description: String {
        switch self { case .setup(let why): why }
    }
}

/// Runs a command to its end off the cooperative pool (`offPool`): a child test run takes seconds.
@discardableResult
func runTLSTestCommand(_ executable: String, _ arguments: [String],
                       environment: [String: String]? = nil) async throws -> (status: Int32, output: String) {
    try await offPool { try ChildProcess.run([executable] + arguments, environment: environment) }
}

/// The per-run certificate material: a self-signed certificate for 127.0.0.1 and a CA bundle of the
/// system's roots plus that certificate (bind-mounted over the system bundle in the child's private
/// mount namespace: the file `TLSClientContext` reads, and Gatehouse trusts no other).
struct TLSTestCertificates {
    static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"
    let directory: URL
    var certificate: String { directory.appendingPathComponent("cert.pem").path }
    var key: String { directory.appendingPathComponent("key.pem").path }
    var bundle: String { directory.appendingPathComponent("bundle.pem").path }
    var script: String { directory.appendingPathComponent("upstream.py").path }

    static func make() async throws -> TLSTestCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let made = TLSTestCertificates(directory: directory)
        let result = try await runTLSTestCommand("/usr/bin/env", [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", made.key, "-out", made.certificate])
        guard result.status == 0 else { throw TLSTestError.setup("openssl req failed: \(result.output)") }
        var bundle = (try? Data(contentsOf: URL(fileURLWithPath: systemBundle))) ?? Data()
        bundle.append(contentsOf: Array("\n".utf8))
        bundle.append(try Data(contentsOf: URL(fileURLWithPath: made.certificate)))
        try bundle.write(to: URL(fileURLWithPath: made.bundle))
        try Data(TLSTestUpstream.script.utf8).write(to: URL(fileURLWithPath: made.script))
        return made
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// In a child test process: the certificates its parent made, in the folder named by the
    /// environment `variable`, after leaving the file `marker` there (the parent's proof that the
    /// scenario ran at all).
    static func forChildScenario(variable: String, marker: String) throws -> TLSTestCertificates {
        guard let path = ProcessInfo.processInfo.environment[variable] else { throw TLSTestError.setup("no \(variable)") }
        let certificates = TLSTestCertificates(directory: URL(fileURLWithPath: path))
        try Data().write(to: certificates.directory.appendingPathComponent(marker))
        return certificates
    }
}

/// Runs this test binary again, filtered to `filter`, inside a private mount namespace
/// (`unshare --mount`) whose system CA bundle also holds `certificates`' certificate; `variable`
/// tells the child where the certificates are. Expects the child to pass and to have left the file
/// `marker` in that folder (proof that the scenario ran). Needs CAP_SYS_ADMIN (root in the container).
func expectPassesTrustingTestCertificate(_ certificates: TLSTestCertificates, variable: String, filter: String,
                                         marker: String) async throws {
    var environment = ProcessInfo.processInfo.environment
    environment[variable] = certificates.directory.path
    let result = try await runTLSTestCommand("/usr/bin/unshare", [
        "--mount", "--propagation", "private", "/bin/sh", "-c",
        #"mount --bind "$0" /etc/ssl/certs/ca-certificates.crt && exec "$@""#,
        certificates.bundle, CommandLine.arguments[0], "--testing-library", "swift-testing",
        "--filter", filter], environment: environment)
    let ran = FileManager.default.fileExists(atPath: certificates.directory.appendingPathComponent(marker).path)
    #expect(ran, "the scenario did not run in the child process:\n\(result.output.suffix(3000))")
    #expect(result.status == 0, "the scenario failed in the child process:\n\(result.output.suffix(6000))")
}

/// Runs `body` with the port of an HTTPS test server whose certificate (made for this call) the
/// system does not trust, as a forged one; the server and its certificate are gone afterwards.
func withUntrustedTLSServer(_ body: (Int) async throws -> Void) async throws {
    let certificates = try await TLSTestCertificates.make()
    defer { certificates.remove() }
    let server = try await TLSTestServer.start(certificates: certificates)
    defer { server.stop() }
    try await body(server.port)
}

/// The HTTPS upstream process.
final class TLSTestServer: Sendable {
    let port: Int
    private let process: ChildProcess

    init(certificates: TLSTestCertificates) throws {
        let process = try ChildProcess(["python3", certificates.script, certificates.certificate, certificates.key,
                                        String(TLSTestUpstream.bigSize)], mergeStandardError: false)
        guard let line = process.readLine(), let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.kill()
            throw TLSTestError.setup("the test upstream did not start")
        }
        self.port = port
        self.process = process
    }

    /// Starts the upstream off the cooperative pool (its first line, the port, takes a Python start-up).
    static func start(certificates: TLSTestCertificates) async throws -> TLSTestServer {
        try await offPool { try TLSTestServer(certificates: certificates) }
    }

    func stop() { process.kill() }
}

/// A gateway context around a configuration whose only route is the test upstream.
func makeTLSTestContext(upstreamPort: Int, upstreamTimeout: String = "5s", maxBody: String = "10m",
                        httpsUpstream: (any UpstreamTransport)? = nil) throws -> GatewayContext {
    let environment = [
        "GATEHOUSE_ISSUER": "http://127.0.0.1:9",
        "GATEHOUSE_CLIENT_ID": "gatehouse-test",
        "GATEHOUSE_CLIENT_SECRET": "not-used",
        "GATEHOUSE_PUBLIC_URL": "http://127.0.0.1:8080",
        "GATEHOUSE_ROUTES": "/api=https://127.0.0.1:\(upstreamPort)",
        "GATEHOUSE_PUBLIC_DIR": FileManager.default.temporaryDirectory.path,
        "GATEHOUSE_UPSTREAM_TIMEOUT": upstreamTimeout,
        "GATEHOUSE_MAX_BODY": maxBody,
    ]
    let configuration: GatehouseConfiguration
    switch GatehouseConfiguration.load(environment: environment, requireSecretKey: false) {
    case .success(let loaded): configuration = loaded
    case .failure(let errors): throw TLSTestError.setup("configuration: \(errors)")
    }
    let logger = Logger(label: "gatehouse.test.tls") { _ in SwiftLogNoOpLogHandler() }
    return GatewayContext(configuration: configuration,
                          providers: .only(ProviderConnection(configuration: configuration,
                                                              http: HTTPProviderClient(timeout: 1), logger: logger),
                                           configuration: configuration),
                          store: InMemorySessionStore(), metrics: GatewayMetrics(), upstream: UpstreamClient(),
                          httpsUpstream: httpsUpstream,
                          staticFiles: StaticFiles(root: configuration.publicDir, logger: logger), logger: logger)
}

/// The proxy's upstream clients run on an event loop (a handler task's in the gateway); the tests
/// relay from a loop of their own.
enum TLSTestLoop {
    static let loop: EventLoop = {
        // A test fixture: without a loop no scenario could run at all.
        let loop = try! EventLoop(index: 95, threadName: "tls-test-loop")
        loop.start()
        return loop
    }()

    static func run<Value: Sendable>(_ body: @escaping @Sendable () async -> Value) async -> Value {
        await Task(executorPreference: loop) {
            await loop.hop()
            return await body()
        }.value
    }
}

/// `UpstreamRelay.forward` on the test loop.
func relayOnTestLoop(_ request: UpstreamRequest, body: any HTTPRequestBody, via transport: any UpstreamTransport,
                     context: GatewayContext, writer: any HTTPResponseWriter) async {
    await TLSTestLoop.run {
        await UpstreamRelay.forward(request, body: body, via: transport, context: context, writer: writer)
    }
}

/// The resident set size of this process, bytes.
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let digits = line.filter(\.isNumber)
        return (Int(String(digits)) ?? 0) * 1024
    }
    return 0
}

/// A response writer that records what it is given and when, hashing the body instead of keeping it.
final class RecordingTLSWriter: HTTPResponseWriter, Sendable {
    struct Record: Sendable {
        var response: HTTPResponse?
        var head: HTTPResponseHead?
        var contentLength: Int?
        var headAt: ContinuousClock.Instant?
        var pieceTimes: [ContinuousClock.Instant] = []
        var pieceTexts: [String] = []
        var bodyLength = 0
        var hasher = SHA256()
        var finished = false
        var aborted = false
        var peakResident = 0

        /// The status the browser got: a relayed head's, or a whole answer's (an error of the
        /// gateway's own, or a small upstream answer relayed in one write).
        var status: Int? { head?.status ?? response?.status }
        /// The body text the browser got, streamed (`keepText`) or whole.
        var text: String {
            pieceTexts.isEmpty ? String(decoding: response?.body ?? [], as: UTF8.self) : pieceTexts.joined()
        }
        /// The length the browser was told: the streamed head's, or the whole answer's field.
        var toldLength: Int? {
            if head != nil { return contentLength }
            return response.map { whole in whole.headers["Content-Length"].flatMap { Int($0) } ?? whole.body.count }
        }
        /// The answer went out complete: streamed to its end, or written whole.
        var complete: Bool { head != nil ? finished : response != nil }
    }

    let start = ContinuousClock.now
    private let record = Mutex(Record())
    /// Pause after each piece (a slow browser).
    private let pause: Duration
    /// `writeBody` fails from this piece on (the browser went away).
    private let failAtPiece: Int?
    private let keepText: Bool

    init(pause: Duration = .zero, failAtPiece: Int? = nil, keepText: Bool = false) {
        self.pause = pause
        self.failAtPiece = failAtPiece
        self.keepText = keepText
    }

    var snapshot: Record { record.withLock { $0 } }
    var bodySHA256: String { record.withLock { $0.hasher }.finalize().map { String(format: "%02x", $0) }.joined() }

    func respond(_ response: HTTPResponse) async {
        record.withLock { $0.response = response }
    }

    func writeHead(_ head: HTTPResponseHead, contentLength: Int?) async throws(HTTPWriteError) {
        let now = ContinuousClock.now
        record.withLock {
            $0.head = head
            $0.contentLength = contentLength
            $0.headAt = now
        }
    }

    func writeBody(_ bytes: [UInt8]) async throws(HTTPWriteError) {
        let now = ContinuousClock.now
        let resident = residentBytes()
        let count = record.withLock { record -> Int in
            record.pieceTimes.append(now)
            record.bodyLength += bytes.count
            record.hasher.update(data: bytes)
            if keepText { record.pieceTexts.append(String(decoding: bytes, as: UTF8.self)) }
            record.peakResident = max(record.peakResident, resident)
            return record.pieceTimes.count
        }
        if let failAtPiece, count >= failAtPiece { throw .connectionClosed }
        if pause > .zero { try? await Task.sleep(for: pause) }
    }

    func finish() async throws(HTTPWriteError) {
        record.withLock { $0.finished = true }
    }

    func abort() {
        record.withLock { $0.aborted = true }
    }

    var headWritten: Bool { record.withLock { $0.head != nil } }
}

extension HTTPResponse {
    /// The `error` member of a JSON error body.
    var jsonErrorCode: String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        return object["error"] as? String
    }
}

/// A browser upload made up on the fly: `size` bytes in `pieceSize` pieces (piece `i` is filled with
/// `i % 251`), pausing after every `pauseEvery` pieces like a slow client. Records the process's
/// peak resident memory as it goes.
final class GeneratedTLSBody: HTTPRequestBody, Sendable {
    let declaredLength: Int?
    let size: Int
    private let pieceSize: Int
    private let pauseEvery: Int
    private let pause: Duration
    private let progress = Mutex((offset: 0, index: 0, peakResident: 0))

    /// GATEHOUSE_MAX_BODY as the server's body reader enforces it (the proxy relays what it reads).
    private let limit: Int

    init(size: Int, pieceSize: Int = 64 << 10, declareLength: Bool, pauseEvery: Int = 8, pause: Duration = .milliseconds(2),
         limit: Int = .max) {
        self.limit = limit
        self.size = size
        self.pieceSize = pieceSize
        self.pauseEvery = pauseEvery
        self.pause = pause
        declaredLength = declareLength ? size : nil
    }

    var peakResident: Int { progress.withLock { $0.peakResident } }

    func next() async throws(HTTPBodyError) -> [UInt8]? {
        let resident = residentBytes()
        let (offset, index) = progress.withLock { state -> (Int, Int) in
            state.peakResident = max(state.peakResident, resident)
            return (state.offset, state.index)
        }
        guard offset < size else { return nil }
        if let declaredLength, declaredLength > limit { throw .tooLarge(limit: limit) }
        if offset + min(pieceSize, size - offset) > limit { throw .tooLarge(limit: limit) }
        if index > 0 && index % pauseEvery == 0 { try? await Task.sleep(for: pause) }
        let piece = Self.piece(index, count: min(pieceSize, size - offset))
        progress.withLock {
            $0.offset += piece.count
            $0.index += 1
        }
        return piece
    }

    /// The SHA-256 (hex) of the whole body.
    var expectedSHA256: String {
        var hasher = SHA256()
        var offset = 0, index = 0
        while offset < size {
            let piece = Self.piece(index, count: min(pieceSize, size - offset))
            hasher.update(data: piece)
            offset += piece.count
            index += 1
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    private static func piece(_ index: Int, count: Int) -> [UInt8] {
        [UInt8](repeating: UInt8(index % 251), count: count)
    }
}

/// The JSON object of a recorded answer's body.
func tlsAnswerJSON(_ record: RecordingTLSWriter.Record) throws -> [String: Any] {
    let text = record.text
    guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
        throw TLSTestError.setup("not a JSON object: \(text.prefix(200))")
    }
    return object
}

/// Counts the opens of one file (inotify `IN_OPEN` on its inode, whatever path it is opened by).
final class FileOpenWatch: @unchecked Sendable {
    private let fd: Int32
    private var opens = 0

    init(path: String) throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        // Closes are watched too: inotify merges an event identical to the last one still queued,
        // so opens alone would count as one however many there were.
        guard fd >= 0, inotify_add_watch(fd, path, UInt32(IN_OPEN | IN_CLOSE)) >= 0 else {
            throw TLSTestError.setup("inotify on \(path): errno \(errno)")
        }
    }

    /// The opens seen so far (reads the events queued since the last call).
    func count() -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return opens }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= n {
                let (mask, length) = buffer.withUnsafeBytes { raw in
                    (raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                     raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                }
                if mask & UInt32(IN_OPEN) != 0 { opens += 1 }
                offset += MemoryLayout<inotify_event>.size + Int(length)
            }
        }
    }

    func close() { _ = Glibc.close(fd) }
}
