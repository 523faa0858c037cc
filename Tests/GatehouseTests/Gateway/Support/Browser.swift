import Foundation
import TestSupport

/// One browser talking to the gateway and the provider: a cookie jar, and the login dance done by
/// hand (every redirect is a separate request the test can inspect).
final class Browser: Sendable {
    let harness: GatewayHarness
    let cookies = CookieJar()

    init(harness: GatewayHarness) { self.harness = harness }

    /// The session cookie's value, if the jar has one.
    var sessionCookie: String? { cookies[harness.cookieName] }

    /// A request to the gateway carrying the jar's cookies; `Set-Cookie` answers update the jar.
    /// - Parameter csrf: adds `X-CSRF: 1`, as the SPA does for `/user`, `POST /logout` and API calls.
    func send(_ method: String, _ target: String, csrf: Bool = false, headers: [(String, String)] = [],
              body: TestRequestBody = .none, timeoutSeconds: Int = 20, collectBody: Bool = true,
              onBodyPiece: (@Sendable ([UInt8]) -> Void)? = nil) async throws -> RawResponse {
        var all = headers
        if csrf { all.append(("X-CSRF", "1")) }
        if let cookie = cookies.header { all.append(("Cookie", cookie)) }
        let response = try await RawHTTPClient.send(port: harness.gatewayPort, method: method, target: target,
                                                    headers: all, body: body, timeoutSeconds: timeoutSeconds,
                                                    collectBody: collectBody, onBodyPiece: onBodyPiece)
        cookies.update(from: response)
        return response
    }

    func get(_ target: String, csrf: Bool = false, headers: [(String, String)] = []) async throws -> RawResponse {
        try await send("GET", target, csrf: csrf, headers: headers)
    }

    // MARK: Login, step by step

    /// `GET /login[?query]`: the gateway's redirect to the provider (or its refusal).
    func beginLogin(query: String? = nil) async throws -> RawResponse {
        try await get(query.map { "/login?" + $0 } ?? "/login")
    }

    /// At the provider: shows the sign-in form of `authorizeURL`, then submits it with `action`
    /// (`approve` or `deny`). Returns the provider's redirect back to the gateway's callback.
    func answerAtProvider(_ authorizeURL: String, username: String = "alice", action: String = "approve") async throws -> String {
        let target = try Self.target(of: authorizeURL, expectingPort: harness.providerPort)
        let page = try await RawHTTPClient.send(port: harness.providerPort, method: "GET", target: target)
        guard page.status == 200 else { throw HarnessError.unexpected("authorize page: \(page.status) \(page.text)") }
        var fields = Self.hiddenInputs(in: page.text)
        fields.append(("username", username))
        fields.append(("action", action))
        let decision = try await RawHTTPClient.send(
            port: harness.providerPort, method: "POST", target: "/authorize",
            headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: .bytes(Array(Self.formEncode(fields).utf8)))
        guard decision.status == 302, let callback = decision.location else {
            throw HarnessError.unexpected("authorize decision: \(decision.status) \(decision.text)")
        }
        return callback
    }

    /// `GET /callback?...` at the gateway with this browser's cookies.
    func finishLogin(_ callbackURL: String) async throws -> RawResponse {
        try await get(try Self.target(of: callbackURL, expectingPort: harness.gatewayPort))
    }

    /// The whole login; fails unless it ends in a session.
    @discardableResult
    func login(query: String? = nil, username: String = "alice") async throws -> LoginTrace {
        let start = try await beginLogin(query: query)
        guard start.status == 302, let authorize = start.location else {
            throw HarnessError.unexpected("/login: \(start.status) \(start.text)")
        }
        let callback = try await answerAtProvider(authorize, username: username)
        let finish = try await finishLogin(callback)
        guard finish.status == 302, let session = sessionCookie else {
            throw HarnessError.unexpected("/callback: \(finish.status) \(finish.text)")
        }
        return LoginTrace(start: start, authorizeURL: authorize, callbackURL: callback, finish: finish, sessionCookie: session)
    }

    // MARK: Parsing helpers

    /// Origin-form target (path and query) of an absolute URL on 127.0.0.1:`port`.
    static func target(of url: String, expectingPort port: Int) throws -> String {
        guard let components = URLComponents(string: url), components.port == port else {
            throw HarnessError.unexpected("unexpected URL \(url) (expected port \(port))")
        }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return components.percentEncodedQuery.map { path + "?" + $0 } ?? path
    }

    /// The value of query parameter `name` in `url`, decoded.
    static func queryValue(_ name: String, in url: String) -> String? {
        URLComponents(string: url)?.queryItems?.first { $0.name == name }?.value
    }

    /// `<input type="hidden" name="…" value="…">` pairs of the provider's sign-in form, unescaped.
    static func hiddenInputs(in html: String) -> [(String, String)] {
        var fields: [(String, String)] = []
        for part in html.components(separatedBy: #"<input type="hidden" name=""#).dropFirst() {
            guard let nameEnd = part.range(of: #"" value=""#),
                  let valueEnd = part.range(of: #"">"#, range: nameEnd.upperBound..<part.endIndex) else { continue }
            fields.append((unescape(String(part[..<nameEnd.lowerBound])),
                           unescape(String(part[nameEnd.upperBound..<valueEnd.lowerBound]))))
        }
        return fields
    }

    private static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// `application/x-www-form-urlencoded`, every byte but the unreserved ones escaped.
    static func formEncode(_ fields: [(String, String)]) -> String {
        fields.map { percentEncode($0.0) + "=" + percentEncode($0.1) }.joined(separator: "&")
    }

    static func percentEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let unreserved = (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || (byte >= 48 && byte <= 57)
                || byte == 45 || byte == 46 || byte == 95 || byte == 126
            out += unreserved ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }
        return out
    }
}

/// The four hops of one login.
struct LoginTrace: Sendable {
    var start: RawResponse
    var authorizeURL: String
    var callbackURL: String
    var finish: RawResponse
    var sessionCookie: String
}
