import DevProvider
import Foundation
import EventLoops
import HTTP1
import HTTPServer
import Synchronization

/// Serves the development provider and remembers every token its token endpoint handed out, so the
/// tests can check that none of them reaches the database file or the logs.
final class ProviderTap: TaskHTTPHandler {
    let provider: DevProvider
    private let issued = IssuedTokens()

    init(provider: DevProvider) { self.provider = provider }

    /// Access, refresh and ID tokens from every successful token response, in order.
    var issuedTokens: [String] { issued.all }

    /// Runs after the token endpoint made a successful answer and before the gateway gets it.
    let beforeTokenAnswer = Mutex<(@Sendable () -> Void)?>(nil)

    func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse? {
        provider.immediateResponse(to: head, peer: peer)
    }

    func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async {
        guard request.head.path == "/token" else { return await provider.handle(request, writer: writer) }
        await provider.handle(request, writer: TokenResponseTap(inner: writer) { [issued, self] body in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else { return }
            let tokens = ["access_token", "refresh_token", "id_token"].compactMap { object[$0] as? String }
            issued.append(tokens)
            self.beforeTokenAnswer.withLock { $0 }?()
        })
    }
}

/// Passes a complete response through after showing its body to `observe`.
private final class TokenResponseTap: HTTPResponseWriter {
    let inner: any HTTPResponseWriter
    let observe: @Sendable ([UInt8]) -> Void

    init(inner: any HTTPResponseWriter, observe: @escaping @Sendable ([UInt8]) -> Void) {
        self.inner = inner
        self.observe = observe
    }

    func respond(_ response: HTTPResponse) async {
        if response.status == 200 { observe(response.body) }
        await inner.respond(response)
    }

    func writeHead(_ head: HTTPResponseHead, contentLength: Int?) async throws(HTTPWriteError) {
        try await inner.writeHead(head, contentLength: contentLength)
    }

    func writeBody(_ bytes: [UInt8]) async throws(HTTPWriteError) { try await inner.writeBody(bytes) }
    func finish() async throws(HTTPWriteError) { try await inner.finish() }
    func abort() { inner.abort() }
    var headWritten: Bool { inner.headWritten }
}

/// Delivers back-channel logout tokens over HTTP like the provider's default transport, and keeps
/// a copy of each form body so a test can replay it.
final class RecordingBackchannelTransport: BackchannelLogoutTransport {
    private let delivered = Mutex<[[UInt8]]>([])
    private let http = HTTPBackchannelLogoutTransport(timeout: 15)

    var bodies: [[UInt8]] { delivered.withLock { $0 } }

    func postForm(_ body: [UInt8], to url: String) async throws -> Int {
        delivered.withLock { $0.append(body) }
        return try await http.postForm(body, to: url)
    }
}

private final class IssuedTokens: Sendable {
    private let tokens = Mutex<[String]>([])
    var all: [String] { tokens.withLock { $0 } }
    func append(_ more: [String]) { tokens.withLock { $0.append(contentsOf: more) } }
}
