import Foundation
import Gatehouse
import GatehouseOIDC
import Testing
import TestSupport

/// A throwaway HTTP server (Python's http.server) on a free loopback port.
final class LocalTestServer: Sendable {
    static let script = #"""
import http.server, json, socketserver, sys, time

class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def echo(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        answer = {"method": self.command, "body": body,
                  "content_type": self.headers.get("Content-Type"),
                  "authorization": self.headers.get("Authorization"),
                  "user_agent": self.headers.get("User-Agent"), "accept": self.headers.get("Accept")}
        self.reply(200, json.dumps(answer).encode(), [("Content-Type", "application/json"), ("X-Test", "yes")])

    def route(self):
        if self.path == "/echo":
            self.echo()
        elif self.path == "/redirect":
            self.reply(302, b"", [("Location", "/echo")])
        elif self.path == "/big":
            self.reply(200, b"x" * (2 * 1024 * 1024))
        elif self.path == "/big-chunked":
            # No Content-Length: only counting the bytes read can stop this one.
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            piece = b"x" * 65536
            for _ in range(40):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/slow":
            time.sleep(3)
            self.reply(200, b"late")
        else:
            self.reply(404, b"")

    do_GET = route
    do_POST = route

Handler.protocol_version = "HTTP/1.1"

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""#

    let process: ChildProcess
    let port: Int

    init() throws {
        let process = try ChildProcess(["python3", "-c", Self.script], mergeStandardError: false)
        guard let line = process.readLine(), let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.kill()
            throw CocoaError(.fileReadCorruptFile)
        }
        self.process = process
        self.port = port
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// SIGKILL: the child inherits the test runner's signal mask, in which SIGTERM may be blocked.
    func stop() { process.kill() }

    static var pythonAvailable: Bool {
        ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":")
            .contains { FileManager.default.isExecutableFile(atPath: "\($0)/python3") } ?? false
    }
}

@Suite("Provider client against a local server", .enabled(if: LocalTestServer.pythonAvailable), .serialized)
struct HTTPProviderClientTests {
    @Test("A POST sends method, headers and body, and returns status, headers and body")
    func postRoundTrip() async throws {
        let server = try await offPool { try LocalTestServer() }
        defer { server.stop() }
        let client = HTTPProviderClient(timeout: 5)
        let response = try await client.send(ProviderHTTPRequest(
            method: .post, url: server.url("/echo"),
            headers: [ProviderHTTPHeader("Content-Type", "application/x-www-form-urlencoded"),
                      ProviderHTTPHeader("Authorization", "Basic YTpi")],
            body: Array("grant_type=refresh_token&refresh_token=r".utf8)))
        #expect(response.status == 200)
        #expect(response.header("x-test") == "yes")
        let echo = try JSONDecoder().decode([String: String?].self, from: Data(response.body))
        #expect(echo["method"] == "POST")
        #expect(echo["body"] == "grant_type=refresh_token&refresh_token=r")
        #expect(echo["content_type"] == "application/x-www-form-urlencoded")
        #expect(echo["authorization"] == "Basic YTpi")
        // Named, as URLSession did; no `Accept` the caller did not set (no default `*/*`).
        #expect(echo["user_agent"] == "gatehouse")
        #expect(echo["accept"] == .some(nil))
    }

    @Test("Redirects are returned, not followed (RFC 9700 §4.11)")
    func noRedirects() async throws {
        let server = try await offPool { try LocalTestServer() }
        defer { server.stop() }
        let response = try await HTTPProviderClient(timeout: 5).send(
            ProviderHTTPRequest(method: .post, url: server.url("/redirect"), body: Array("code=secret".utf8)))
        #expect(response.status == 302)
        #expect(response.header("Location") == "/echo")
    }

    @Test("A body above the cap is refused, with or without a Content-Length", arguments: ["/big", "/big-chunked"])
    func sizeCap(path: String) async throws {
        let server = try await offPool { try LocalTestServer() }
        defer { server.stop() }
        await #expect(throws: ProviderTransportError.responseTooLarge(limit: 1 << 20)) {
            try await HTTPProviderClient(timeout: 5).send(ProviderHTTPRequest(method: .get, url: server.url(path)))
        }
        let small = HTTPProviderClient(timeout: 5, maximumResponseSize: 10)
        await #expect(throws: ProviderTransportError.responseTooLarge(limit: 10)) {
            try await small.send(ProviderHTTPRequest(method: .post, url: server.url("/echo"), body: Array("a=b".utf8)))
        }
    }

    @Test("Kept connections carry later calls, POSTs included")
    func keptConnection() async throws {
        let server = try await offPool { try LocalTestServer() }
        defer { server.stop() }
        let client = HTTPProviderClient(timeout: 5)
        for round in 0..<3 {
            let response = try await client.send(ProviderHTTPRequest(method: .post, url: server.url("/echo"),
                                                                     body: Array("round=\(round)".utf8)))
            let echo = try JSONDecoder().decode([String: String?].self, from: Data(response.body))
            #expect(echo["body"] == "round=\(round)")
        }
    }

    @Test("No answer within the timeout is .timeout")
    func timeout() async throws {
        let server = try await offPool { try LocalTestServer() }
        defer { server.stop() }
        await #expect(throws: ProviderTransportError.timeout) {
            try await HTTPProviderClient(timeout: 1).send(ProviderHTTPRequest(method: .get, url: server.url("/slow")))
        }
    }

    @Test("A refused connection is .unreachable")
    func unreachable() async throws {
        let server = try await offPool { try LocalTestServer() }
        let url = server.url("/echo")
        server.stop()
        await Self.expectUnreachable(ProviderHTTPRequest(method: .get, url: url))
    }

    /// Sends `request` and expects no HTTP answer at all: `.unreachable`.
    static func expectUnreachable(_ request: ProviderHTTPRequest, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            let response = try await HTTPProviderClient(timeout: 5).send(request)
            Issue.record("expected no answer, got \(response.status)", sourceLocation: sourceLocation)
        } catch {
            guard case .unreachable = error else {
                Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
                return
            }
        }
    }

    @Test("A URL that is not http(s) is refused without a request")
    func invalidURL() async {
        await #expect(throws: ProviderTransportError.invalidURL("file:///etc/passwd")) {
            try await HTTPProviderClient(timeout: 1).send(ProviderHTTPRequest(method: .get, url: "file:///etc/passwd"))
        }
    }
}
