import DevProvider
import Foundation
import HTTP1
import HTTPServer
import Logging
import Synchronization
import GatehouseEncoding
import TestSupport

/// Collects what a handler writes, in memory.
final class RecordingResponseWriter: HTTPResponseWriter {
    private let recorded = Mutex<(head: HTTPResponseHead?, body: [UInt8], finished: Bool)>((nil, [], false))

    func respond(_ response: HTTPResponse) async {
        recorded.withLock { $0 = (response.head, response.body, true) }
    }

    func writeHead(_ head: HTTPResponseHead, contentLength: Int?) async throws(HTTPWriteError) {
        recorded.withLock { $0.head = head }
    }

    func writeBody(_ bytes: [UInt8]) async throws(HTTPWriteError) {
        recorded.withLock { $0.body += bytes }
    }

    func finish() async throws(HTTPWriteError) {
        recorded.withLock { $0.finished = true }
    }

    func abort() {}

    var headWritten: Bool { recorded.withLock { $0.head != nil } }

    var response: HTTPResponse? {
        recorded.withLock { state in
            state.head.map { HTTPResponse(status: $0.status, headers: $0.headers, body: state.body) }
        }
    }
}

/// Captures back-channel logout deliveries instead of making HTTP calls.
final class CapturingTransport: BackchannelLogoutTransport {
    private let deliveries = Mutex<[(url: String, body: String)]>([])
    let status: Int

    init(status: Int = 200) { self.status = status }

    func postForm(_ body: [UInt8], to url: String) async throws -> Int {
        deliveries.withLock { $0.append((url, String(decoding: body, as: UTF8.self))) }
        return status
    }

    var delivered: [(url: String, body: String)] { deliveries.withLock { $0 } }
}

extension HTTPResponse {
    var text: String { String(decoding: body, as: UTF8.self) }

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    /// The query parameters of the `Location` header.
    var locationQuery: [String: String] {
        guard let location = headers["Location"], let items = URLComponents(string: location)?.queryItems else { return [:] }
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }
}

/// A provider with two clients and a manual clock, and helpers that walk the code flow.
struct DevProviderFixture {
    static let issuer = "http://127.0.0.1:9400"
    static let redirectURI = "http://127.0.0.1:8080/callback"
    /// RFC 7636 Appendix B.
    static let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    static let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

    static let confidentialClient = DevClient(
        id: "gatehouse", secret: "s3cret", redirectURIs: [redirectURI],
        postLogoutRedirectURIs: ["http://127.0.0.1:8080/"],
        backchannelLogoutURI: "http://127.0.0.1:8080/backchannel-logout")
    static let publicClient = DevClient(id: "spa", redirectURIs: ["http://127.0.0.1:3000/cb"])

    let provider: DevProvider
    let clock = ManualClock()
    let transport = CapturingTransport()

    init(issuer: String = DevProviderFixture.issuer, rotateRefreshTokens: Bool = true) {
        let clock = self.clock
        provider = DevProvider(
            configuration: DevProviderConfiguration(
                issuer: issuer, clients: [Self.confidentialClient, Self.publicClient],
                rotateRefreshTokens: rotateRefreshTokens),
            logger: Logger(label: "test.devprovider", factory: { _ in SwiftLogNoOpLogHandler() }),
            now: { clock.now() }, transport: transport)
    }

    func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: String = "") async -> HTTPResponse {
        let writer = RecordingResponseWriter()
        let request = HTTPRequest(head: HTTPRequestHead(method: method, target: target, headers: HTTPHeaders(headers)),
                                  body: BufferedRequestBody(Array(body.utf8)))
        await provider.handle(request, writer: writer)
        return writer.response ?? HTTPResponse(status: 0)
    }

    func postForm(_ path: String, _ pairs: [(String, String)], headers: [(String, String)] = []) async -> HTTPResponse {
        await send("POST", path, headers: [("Content-Type", "application/x-www-form-urlencoded")] + headers,
                   body: Self.formEncode(pairs))
    }

    static func formEncode(_ pairs: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return pairs.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
    }

    static func basic(_ id: String, _ secret: String) -> (String, String) {
        ("Authorization", "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString())
    }

    static func authorizationParameters(clientID: String = "gatehouse", redirectURI: String = redirectURI,
                                        state: String = "state-123", nonce: String = "nonce-456",
                                        scope: String = "openid profile email offline_access") -> [(String, String)] {
        [("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirectURI), ("scope", scope),
         ("state", state), ("nonce", nonce), ("code_challenge", challenge), ("code_challenge_method", "S256")]
    }

    /// Signs in through `POST /authorize` and returns the code from the redirect.
    func authorizationCode(username: String = "alice", email: String = "alice@example.test",
                           clientID: String = "gatehouse", redirectURI: String = redirectURI) async -> String {
        let response = await postForm("/authorize", Self.authorizationParameters(clientID: clientID, redirectURI: redirectURI)
                                      + [("username", username), ("email", email), ("action", "approve")])
        return response.locationQuery["code"] ?? ""
    }

    func exchange(_ code: String, verifier: String = DevProviderFixture.verifier,
                  redirectURI: String = redirectURI) async -> HTTPResponse {
        await postForm("/token", [("grant_type", "authorization_code"), ("code", code),
                                  ("redirect_uri", redirectURI), ("code_verifier", verifier)],
                       headers: [Self.basic("gatehouse", "s3cret")])
    }

    func refresh(_ refreshToken: String) async -> HTTPResponse {
        await postForm("/token", [("grant_type", "refresh_token"), ("refresh_token", refreshToken)],
                       headers: [Self.basic("gatehouse", "s3cret")])
    }

    /// Signs in and exchanges the code: the token response's JSON.
    func signIn(username: String = "alice") async -> [String: Any] {
        await exchange(await authorizationCode(username: username)).json
    }
}
