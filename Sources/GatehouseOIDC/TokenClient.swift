import FoundationEssentials
import GatehouseEncoding

/// Calls the provider's token endpoint (code exchange, refresh) and revocation endpoint.
///
/// Every call is a form-encoded `POST` (RFC 6749 §4.1.3, §6; RFC 7009 §2.1) authenticated as
/// configured. For example:
/// `let tokens = try await client.exchangeCode(code: code, codeVerifier: verifier, redirectURI: redirect)`
public struct TokenClient: Sendable {
    public let tokenEndpoint: String
    public let revocationEndpoint: String?
    public let clientID: String
    public let authMethod: ClientAuthMethod
    private let clientSecret: String?
    private let http: any ProviderHTTPClient
    /// The clock for client assertions (`client_secret_jwt`, `private_key_jwt`).
    private let now: @Sendable () -> Date
    /// The client's key for `private_key_jwt`.
    private let signingKey: ClientSigningKey?
    /// A client secret signed anew when it nears its end (Sign in with Apple) instead of `clientSecret`.
    private let generatedSecret: AppleClientSecret?
    /// `GATEHOUSE_TOKEN_REQUEST`: `.get` sends the token-endpoint parameters in the query, as
    /// Facebook's Graph API `/oauth/access_token` takes them. Revocation stays a `POST`. The
    /// configuration allows a client secret in that query only for the `facebook` profile; the
    /// URL is never logged (``ProviderHTTPRequest/description`` drops the query).
    public var tokenRequestMethod: ProviderHTTPRequest.Method = .post
    /// The `aud` of client assertions (`client_secret_jwt`, `private_key_jwt`): nil for the token
    /// endpoint (OIDC Core §9; also what RFC 9126 §2 has every provider accept at its PAR
    /// endpoint); the provider's issuer under FAPI 2.0, as its sole audience, so an assertion
    /// cannot be replayed at another provider whose endpoint a hostile discovery document named
    /// (draft-ietf-oauth-rfc7523bis).
    public var assertionAudience: String?
    /// Opens an encrypted `id_token` (`GATEHOUSE_CLIENT_ENCRYPTION_KEY`): the signed token inside
    /// replaces it in the response, so it is what is validated, stored and sent as `id_token_hint`
    /// (RP-Initiated Logout §2 asks for the signed one).
    public var decrypter: JWEDecrypter?
    /// The provider's latest DPoP nonce (RFC 9449 §8), shared by every request of this client.
    public let dpopNonces = DPoPNonces()

    /// - Throws: ``TokenEndpointError/invalidConfiguration(_:)`` when `authMethod` needs a secret
    ///   and none is given.
    public init(tokenEndpoint: String, revocationEndpoint: String?, clientID: String, clientSecret: String?,
                authMethod: ClientAuthMethod, http: any ProviderHTTPClient, signingKey: ClientSigningKey? = nil,
                generatedSecret: AppleClientSecret? = nil,
                now: @escaping @Sendable () -> Date = { Date() }) throws(TokenEndpointError) {
        if authMethod.requiresSecret && (clientSecret ?? "").isEmpty && generatedSecret == nil {
            throw .invalidConfiguration("\(authMethod.rawValue) needs GATEHOUSE_CLIENT_SECRET")
        }
        if authMethod == .privateKeyJWT && signingKey == nil {
            throw .invalidConfiguration("private_key_jwt needs GATEHOUSE_CLIENT_PRIVATE_KEY")
        }
        self.signingKey = signingKey
        self.generatedSecret = generatedSecret
        self.tokenEndpoint = tokenEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.clientID = clientID
        self.clientSecret = authMethod.requiresSecret ? clientSecret : nil
        self.authMethod = authMethod
        self.http = http
        self.now = now
    }

    /// Takes the token and revocation endpoints from validated provider metadata.
    public init(metadata: ProviderMetadata, clientID: String, clientSecret: String?, authMethod: ClientAuthMethod,
                http: any ProviderHTTPClient, signingKey: ClientSigningKey? = nil, generatedSecret: AppleClientSecret? = nil,
                now: @escaping @Sendable () -> Date = { Date() }) throws(TokenEndpointError) {
        try self.init(tokenEndpoint: metadata.tokenEndpoint, revocationEndpoint: metadata.revocationEndpoint,
                      clientID: clientID, clientSecret: clientSecret, authMethod: authMethod, http: http,
                      signingKey: signingKey, generatedSecret: generatedSecret, now: now)
    }

    /// Exchanges an authorization code (RFC 6749 §4.1.3 with RFC 7636 §4.5 `code_verifier`).
    /// The response must carry an `id_token` (OIDC Core §3.1.3.3); validating it is the caller's job.
    /// `requireIDToken`: false for a provider without OpenID Connect (GitHub).
    public func exchangeCode(code: String, codeVerifier: CodeVerifier, redirectURI: String,
                             dpop: DPoPKey? = nil, requireIDToken: Bool = true) async throws(TokenEndpointError) -> TokenResponse {
        let response = try await postForTokens([
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirectURI),
            ("code_verifier", codeVerifier.value),
        ], dpop: dpop)
        guard response.idToken != nil || !requireIDToken else { throw .invalidResponse("no id_token in the code exchange response") }
        return response
    }

    /// Refreshes the access token (RFC 6749 §6). A response without `refresh_token` means the old
    /// one stays valid; `RefreshFailure` reads a failure (which refusals end the session).
    public func refresh(refreshToken: String, scope: String? = nil, dpop: DPoPKey? = nil) async throws(TokenEndpointError) -> TokenResponse {
        var parameters = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
        if let scope { parameters.append(("scope", scope)) }
        return try await postForTokens(parameters, dpop: dpop)
    }

    /// The `token_type_hint` of RFC 7009 §2.1.
    public enum TokenTypeHint: String, Sendable {
        case accessToken = "access_token"
        case refreshToken = "refresh_token"
    }

    /// Revokes a token (RFC 7009 §2.1). `200` is success, whether or not the token was valid (§2.2).
    /// - Throws: ``TokenEndpointError/invalidConfiguration(_:)`` when the provider has no `revocation_endpoint`.
    public func revoke(token: String, tokenTypeHint: TokenTypeHint? = .refreshToken) async throws(TokenEndpointError) {
        guard let revocationEndpoint else {
            throw .invalidConfiguration("the provider advertises no revocation_endpoint")
        }
        var parameters = [("token", token)]
        if let tokenTypeHint { parameters.append(("token_type_hint", tokenTypeHint.rawValue)) }
        let response = try await post(to: revocationEndpoint, parameters)
        guard response.status == 200 else { throw Self.failure(response) }
    }

    func postForTokens(_ parameters: [(String, String)], dpop: DPoPKey? = nil) async throws(TokenEndpointError) -> TokenResponse {
        let response = try await post(to: tokenEndpoint, parameters, dpop: dpop)
        guard response.status == 200 else { throw Self.failure(response) }
        var tokens: TokenResponse
        do { tokens = try TokenResponse.decode(response.body) } catch {
            // GitHub answers its errors (`bad_verification_code`, …) with 200 and an error body.
            if Self.isErrorBody(response.body) { throw Self.failure(response) }
            throw error
        }
        if let idToken = tokens.idToken, JWEDecrypter.isJWE(idToken) { tokens.idToken = try signedIDToken(idToken) }
        // RFC 9449 §5: asked with a proof, the token must be bound to it; a bearer token would work
        // for anyone who copies it, which is what DPoP is there to prevent.
        if dpop != nil, tokens.tokenType.lowercased() != "dpop" {
            throw .invalidResponse("token_type \"\(tokens.tokenType.prefix(20))\" where DPoP was asked for (GATEHOUSE_DPOP=on): the provider did not bind the token")
        }
        return tokens
    }

    /// The request as sent, with client authentication applied (exposed for tests of request shape).
    func request(to url: String, _ parameters: [(String, String)], signedAssertion: String? = nil,
                 secret generated: String? = nil) -> ProviderHTTPRequest {
        var parameters = parameters
        let clientSecret = generated ?? self.clientSecret
        var headers = [ProviderHTTPHeader("Content-Type", "application/x-www-form-urlencoded"),
                       ProviderHTTPHeader("Accept", "application/json")]
        switch authMethod {
        case .clientSecretBasic:
            // RFC 6749 §2.3.1: each part form-urlencoded before the Basic encoding.
            let credentials = PercentEncoding.encodeFormComponent(clientID) + ":"
                + PercentEncoding.encodeFormComponent(clientSecret ?? "")
            headers.append(ProviderHTTPHeader("Authorization", "Basic " + Data(credentials.utf8).base64EncodedString()))
        case .clientSecretPost:
            parameters += [("client_id", clientID), ("client_secret", clientSecret ?? "")]
        case .none:
            parameters.append(("client_id", clientID))
        case .clientSecretJWT:
            parameters += [("client_id", clientID), ("client_assertion_type", ClientAssertion.type),
                           ("client_assertion", ClientAssertion.clientSecretJWT(clientID: clientID, secret: clientSecret ?? "",
                                                                                audience: assertionAudience ?? tokenEndpoint,
                                                                                now: now()))]
        case .privateKeyJWT:
            parameters += [("client_id", clientID), ("client_assertion_type", ClientAssertion.type),
                           ("client_assertion", signedAssertion ?? "")]
        }
        let operation: ProviderOperation = url == tokenEndpoint
            ? .ofGrant(parameters.first { $0.0 == "grant_type" }?.1)
            : url == revocationEndpoint ? .revocation : .par
        if tokenRequestMethod == .get && url == tokenEndpoint {
            headers.removeAll { $0.name == "Content-Type" }
            return ProviderHTTPRequest(method: .get, url: PercentEncoding.appendingQuery(parameters, to: url), headers: headers,
                                       operation: operation)
        }
        return ProviderHTTPRequest(method: .post, url: url, headers: headers, body: PercentEncoding.formBody(parameters),
                                   operation: operation)
    }

    /// A fresh `private_key_jwt` assertion, or nil for the other methods (`client_secret_jwt`
    /// signs its own in ``request(to:_:signedAssertion:)``).
    private func signedAssertion() async throws(TokenEndpointError) -> String? {
        guard authMethod == .privateKeyJWT, let signingKey else { return nil }
        return try await signingKey.assertion(clientID: clientID, audience: assertionAudience ?? tokenEndpoint, now: now())
    }

    func post(to url: String, _ parameters: [(String, String)], dpop: DPoPKey? = nil) async throws(TokenEndpointError) -> ProviderHTTPResponse {
        let secret = try await generatedSecret?.secret(now: now())
        var outgoing = request(to: url, parameters, signedAssertion: try await signedAssertion(), secret: secret)
        guard let dpop else {
            do { return try await http.send(outgoing) } catch { throw .transport(error) }
        }
        // RFC 9449 §5, §8: a proof with every token request, the provider's nonce once it gave one;
        // an answer asking for a (new) nonce is retried once with it.
        for attempt in 0..<2 {
            if attempt > 0, authMethod.usesAssertion {
                // The first assertion's jti is spent at a provider that remembers them (RFC 7523 §3).
                outgoing = request(to: url, parameters, signedAssertion: try await signedAssertion(), secret: secret)
            }
            let proof = dpop.proof(method: outgoing.method == .get ? "GET" : "POST", url: url,
                                   nonce: dpopNonces.nonce(for: url), accessToken: nil,
                                   now: Int64(now().timeIntervalSince1970))
            outgoing.headers.removeAll { $0.name == "DPoP" }
            outgoing.headers.append(ProviderHTTPHeader("DPoP", proof))
            let response: ProviderHTTPResponse
            do { response = try await http.send(outgoing) } catch { throw .transport(error) }
            if let nonce = response.header("DPoP-Nonce") { dpopNonces.remember(nonce, for: url) }
            guard attempt == 0, response.header("DPoP-Nonce") != nil,
                  DPoPKey.asksForNonce(status: response.status, body: response.body,
                                       wwwAuthenticate: response.header("WWW-Authenticate")) else { return response }
        }
        throw .unexpectedStatus(400)
    }

    /// The signed ID token inside an encrypted one (OIDC Core §10.2: signed, then encrypted).
    func signedIDToken(_ encrypted: String) throws(TokenEndpointError) -> String {
        guard let decrypter else {
            throw .invalidResponse("an encrypted id_token, but no GATEHOUSE_CLIENT_ENCRYPTION_KEY is set")
        }
        let inner: String
        do { inner = String(decoding: try decrypter.decrypt(encrypted), as: UTF8.self) } catch {
            throw .invalidResponse("id_token: \(error)")
        }
        guard inner.utf8.reduce(0, { $1 == UInt8(ascii: ".") ? $0 + 1 : $0 }) == 2 else {
            throw .invalidResponse("the encrypted id_token holds no signed JWT (an unsigned ID token is not accepted)")
        }
        return inner
    }

    /// Whether a body is an OAuth error (`{"error": "…"}`) rather than tokens.
    static func isErrorBody(_ body: [UInt8]) -> Bool {
        guard let object = (try? JSONValue.parse(body))?.objectValue, object["access_token"] == nil else { return false }
        return object["error"]?.stringValue != nil
    }

    /// An OAuth error body (RFC 6749 §5.2) when there is one, else the bare status.
    static func failure(_ response: ProviderHTTPResponse) -> TokenEndpointError {
        let value = try? JSONValue.parse(response.body)
        // Facebook's Graph API nests its error: {"error": {"message", "type", "code"}} ("Handling Errors").
        if let graph = value?.objectValue?["error"]?.objectValue, let type = graph["type"]?.stringValue, !type.isEmpty {
            return .oauth(code: OAuthErrorCode(logSafe(type)), description: graph["message"]?.stringValue.map(logSafe),
                          httpStatus: response.status)
        }
        guard let value, let code = value.objectValue?["error"]?.stringValue, !code.isEmpty else {
            return .unexpectedStatus(response.status)
        }
        let description = value.objectValue?["error_description"]?.stringValue.map(logSafe)
        return .oauth(code: OAuthErrorCode(logSafe(code)), description: description, httpStatus: response.status)
    }

    /// Provider text destined for logs: printable ASCII only (RFC 6749 §5.2 allows no more), bounded.
    static func logSafe(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(300).filter { $0.value >= 0x20 && $0.value < 0x7f }))
    }
}
