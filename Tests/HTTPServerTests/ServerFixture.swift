#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization
import Testing
@testable import EventLoops
@testable import HTTP1
@testable import HTTPServer
import TestSupport

/// What the test handler saw, for assertions about the server's side of an exchange.
final class HandlerLog: Sendable {
    struct State {
        var calls: [String: Int] = [:]
        var bodyErrors: [HTTPBodyError] = []
        var writeErrors: [HTTPWriteError] = []
        /// Body bytes the flood handler's `writeBody` calls have accepted so far.
        var floodAccepted = 0
        var gateOpen = false
        /// Memos `/memo` made (`RequestConnection.memo`).
        var memosMade = 0
    }
    let state = Mutex(State())

    func calls(_ path: String) -> Int { state.withLock { $0.calls[path, default: 0] } }
    var bodyErrors: [HTTPBodyError] { state.withLock { $0.bodyErrors } }
    var writeErrors: [HTTPWriteError] { state.withLock { $0.writeErrors } }
    var floodAccepted: Int { state.withLock { $0.floodAccepted } }
    func openGate() { state.withLock { $0.gateOpen = true } }
}

/// The byte at `offset` of every generated body: a pattern whose period (251) never lines up with
/// chunk or buffer sizes, so a lost, duplicated or reordered piece is always detected.
func patternByte(_ offset: Int) -> UInt8 { UInt8(truncatingIfNeeded: offset % 251) }

func pattern(from start: Int, count: Int) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(count)
    var offset = start % 251
    while out.count < count {
        let take = min(251 - offset, count - out.count)
        out.append(contentsOf: patternCycle[offset..<(offset + take)])
        offset = 0
    }
    return out
}

/// The first offset where `body` differs from the pattern (or its length), nil when it matches.
/// (Comparing with `==` inside `#expect` would make a failure diff megabytes element by element.)
func patternMismatch(_ body: [UInt8], expectedCount: Int) -> Int? {
    if body.count != expectedCount { return min(body.count, expectedCount) }
    return body.withUnsafeBufferPointer { bytes in
        var offset = 0, cycle = 0
        while offset < bytes.count {
            if bytes[offset] != UInt8(truncatingIfNeeded: cycle) { return offset }
            offset += 1
            cycle = cycle == 250 ? 0 : cycle + 1
        }
        return nil
    }
}

private let patternCycle: [UInt8] = (0..<251).map { UInt8($0) }

/// A handler with one behaviour per path (all bodies are deterministic):
/// - `/text`: 200 `hello world` in one `respond`; `/immediate`: `immediate` from `immediateResponse`
///   (like a cached static file); `/immediate-4k`: 4 KiB of pattern from there.
/// - `/echo`: reads the whole body (no limit of its own) and sends it back; 413/400 on body errors.
/// - `/ignore`: answers without reading the body. `/count`: answers `counted`.
/// - `/stream?n=N&size=S`: a chunked body of N pieces; `/fixed?size=S`: a Content-Length body.
/// - `/slow?ms=M`: answers after M ms. `/flood?mib=M`: streams M MiB in 64 KiB pieces.
/// - `/big?size=S`: a Content-Length body of S bytes in one `respond`.
/// - `/head-then-echo`: starts a chunked answer, then streams the request body into it.
/// - `/gate`: answers once the test calls `openGate()`.
/// - `/endless`: streams until `writeBody` fails.
/// - `/answer-then-work`: answers at once, then keeps its task busy a little before returning.
/// Every other path: 200 with the target as body.
/// What `/memo` keeps with a connection.
final class MemoProbe {
    let number: Int
    init(number: Int) { self.number = number }
}

struct TestHandler: TaskHTTPHandler {
    let log: HandlerLog

    func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse? {
        if head.path == "/immediate-4k" {
            log.state.withLock { $0.calls["/immediate-4k", default: 0] += 1 }
            return HTTPResponse(status: 200, body: pattern(from: 0, count: 4096))
        }
        guard head.path == "/immediate" else { return nil }
        log.state.withLock { $0.calls["/immediate", default: 0] += 1 }
        return HTTPResponse(status: 200, headers: ["Content-Type": "text/plain"], body: "immediate")
    }

    func answer(_ head: HTTPRequestHead, _ connection: RequestConnection) -> HandlerAnswer {
        guard head.path == "/memo" else {
            if let response = immediateResponse(to: head, peer: connection.peer) { return .now(response) }
            return .inTask { [self] request, writer in await handle(request, writer: writer) }
        }
        // The number of the memo kept with this connection.
        log.state.withLock { $0.calls["/memo", default: 0] += 1 }
        let memo = connection.memo { MemoProbe(number: log.state.withLock { $0.memosMade += 1; return $0.memosMade }) }
        return .now(HTTPResponse(status: 200, body: "\(memo.number)"))
    }

    func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async {
        let path = String(request.head.path)
        log.state.withLock { $0.calls[path, default: 0] += 1 }
        let query = Self.query(request.head)
        do {
            switch path {
            case "/text":
                await writer.respond(HTTPResponse(status: 200, headers: ["Content-Type": "text/plain"], body: "hello world"))
            case "/loop":
                // The index of the event loop serving this connection.
                await writer.respond(HTTPResponse(status: 200, body: "\(request.id.loop)"))
            case "/echo":
                await echo(request, writer: writer)
            case "/ignore":
                await writer.respond(HTTPResponse(status: 200, body: "ignored"))
            case "/count":
                await writer.respond(HTTPResponse(status: 200, body: "counted"))
            case "/stream":
                let n = query["n"] ?? 3, size = query["size"] ?? 100
                try await writer.writeHead(HTTPResponseHead(status: 200), contentLength: nil)
                for i in 0..<n { try await writer.writeBody(pattern(from: i * size, count: size)) }
                try await writer.finish()
            case "/fixed":
                let size = query["size"] ?? 1000
                try await writer.writeHead(HTTPResponseHead(status: 200), contentLength: size)
                var sent = 0
                while sent < size {
                    let piece = min(1000, size - sent)
                    try await writer.writeBody(pattern(from: sent, count: piece))
                    sent += piece
                }
                try await writer.finish()
            case "/big":
                await writer.respond(HTTPResponse(status: 200, body: pattern(from: 0, count: query["size"] ?? 1000)))
            case "/head-then-echo":
                try await writer.writeHead(HTTPResponseHead(status: 200), contentLength: nil)
                while let piece = try await request.body.next() { try await writer.writeBody(piece) }
                try await writer.finish()
            case "/gate":
                // Waits until the test opens the gate (deterministic "request in flight").
                while !log.state.withLock({ $0.gateOpen }) { try? await Task.sleep(nanoseconds: 5_000_000) }
                await writer.respond(HTTPResponse(status: 200, body: "gate passed"))
            case "/slow":
                try? await Task.sleep(nanoseconds: UInt64(query["ms"] ?? 100) * 1_000_000)
                await writer.respond(HTTPResponse(status: 200, body: "slow done"))
            case "/flood":
                let total = (query["mib"] ?? 1) * 1024 * 1024, piece = 64 * 1024
                try await writer.writeHead(HTTPResponseHead(status: 200), contentLength: nil)
                var sent = 0
                while sent < total {
                    try await writer.writeBody(pattern(from: sent, count: piece))
                    sent += piece
                    log.state.withLock { $0.floodAccepted = sent }
                }
                try await writer.finish()
            case "/answer-then-work":
                // The next pipelined request is handed over while this run has not returned yet.
                await writer.respond(HTTPResponse(status: 200, body: request.head.target))
                try? await Task.sleep(nanoseconds: 2_000_000)
            case "/endless":
                try await writer.writeHead(HTTPResponseHead(status: 200), contentLength: nil)
                var sent = 0
                while true {
                    try await writer.writeBody(pattern(from: sent, count: 16 * 1024))
                    sent += 16 * 1024
                }
            default:
                await writer.respond(HTTPResponse(status: 200, body: request.head.target))
            }
        } catch let error as HTTPWriteError {
            log.state.withLock { $0.writeErrors.append(error) }
        } catch let error as HTTPBodyError {
            log.state.withLock { $0.bodyErrors.append(error) }
        } catch {
            Issue.record("unexpected handler error \(error)")
        }
    }

    private func echo(_ request: HTTPRequest, writer: any HTTPResponseWriter) async {
        do {
            let body = try await request.body.collect(limit: .max)
            await writer.respond(HTTPResponse(status: 200, body: body))
        } catch {
            log.state.withLock { $0.bodyErrors.append(error) }
            switch error {
            case .tooLarge: await writer.respond(HTTPResponse(status: 413, body: "too large"))
            case .malformed: await writer.respond(HTTPResponse(status: 400, body: "malformed"))
            case .connectionClosed: break
            }
        }
    }

    private static func query(_ head: HTTPRequestHead) -> [String: Int] {
        var out: [String: Int] = [:]
        for pair in (head.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = Int(parts[1]) { out[String(parts[0])] = value }
        }
        return out
    }
}

/// A running server on a free loopback port with the test handler and short timeouts.
struct TestServer {
    let server: HTTPServer
    let log: HandlerLog
    var port: Int { server.localPort }

    /// Timeouts are generous here: the test tasks share a two-thread pool with CPU-bound tests, so
    /// a client may act late (a client starved for over 5 s between connecting and sending got a 408
    /// once, in a loaded parallel run). Tests of the timeouts themselves use `shortTimeouts`.
    static func configuration(host: String = "127.0.0.1") -> HTTPServerConfiguration {
        var config = HTTPServerConfiguration()
        config.host = host
        config.port = 0
        config.loopCount = 2
        config.headTimeoutNanoseconds = 30_000_000_000
        config.idleTimeoutNanoseconds = 30_000_000_000
        config.progressTimeoutNanoseconds = 30_000_000_000
        config.maxBodyBytes = 1024 * 1024
        config.maxDrainBytes = 64 * 1024
        return config
    }

    /// Idle timeout 1 s (the head timeout stays generous).
    static var shortIdle: HTTPServerConfiguration {
        var config = configuration()
        config.idleTimeoutNanoseconds = 1_000_000_000
        return config
    }

    /// Head timeout 500 ms, idle timeout 1 s.
    static var shortTimeouts: HTTPServerConfiguration {
        var config = configuration()
        config.headTimeoutNanoseconds = 500_000_000
        config.idleTimeoutNanoseconds = 1_000_000_000
        return config
    }

    init(_ configuration: HTTPServerConfiguration = TestServer.configuration(),
         observer: (any HTTPServerObserver)? = nil) throws {
        log = HandlerLog()
        server = HTTPServer(configuration: configuration, handler: TestHandler(log: log), observer: observer,
                            logger: Logger(label: "test.http-server") { _ in SwiftLogNoOpLogHandler() })
        try server.start()
    }

    func client(receiveBuffer: Int32? = nil) async throws -> RawClient {
        try await RawClient(port: port, host: server.configuration.host, receiveBuffer: receiveBuffer)
    }

    func stop() async { await server.shutdown(graceNanoseconds: 0) }
}

/// Runs `body` against a fresh server and always shuts it down.
func withServer(_ configuration: HTTPServerConfiguration = TestServer.configuration(),
                _ body: (TestServer) async throws -> Void) async throws {
    let server = try TestServer(configuration)
    do {
        try await body(server)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

/// `GET path` with a Host field.
func get(_ path: String, _ extra: String = "") -> String {
    "GET \(path) HTTP/1.1\r\nHost: test\r\n\(extra)\r\n"
}
