import GatehouseEncoding
/// The secrets of one pending login, kept server-side until `/callback` (SPEC `/login`).
/// Its description is redacted.
public struct PendingLoginSecrets: Sendable, Equatable, CustomStringConvertible {
    public let state: String
    public let nonce: String
    public let codeVerifier: CodeVerifier

    public var description: String { "PendingLoginSecrets(redacted)" }
}

/// The Authorization Code request with PKCE (RFC 6749 §4.1.1, RFC 7636 §4.3, OIDC Core §3.1.2.1).
public enum AuthorizationRequest {
    /// Parameters Gatehouse sets itself. `GATEHOUSE_AUTH_PARAMS` may not override them, nor switch
    /// the flow (`response_mode`: the callback is a GET with a query; `request`/`request_uri`: a
    /// request object would replace the signed-off parameters).
    public static let reservedParameterNames: Set<String> = [
        "response_type", "client_id", "redirect_uri", "scope", "state", "nonce",
        "code_challenge", "code_challenge_method", "response_mode", "request", "request_uri",
    ]

    /// Builds the URL the browser is redirected to, and the secrets to store as the pending login.
    ///
    /// For example:
    /// `let (url, login) = AuthorizationRequest.make(metadata: m, clientID: "spa", redirectURI: "https://app/callback", scopes: ["profile"], extraParameters: [])`
    ///
    /// - Parameters:
    ///   - scopes: requested scopes; `openid` is always sent first, duplicates and empty entries dropped.
    ///   - extraParameters: `GATEHOUSE_AUTH_PARAMS`; names in ``reservedParameterNames`` are ignored
    ///     as a second line of defence: the configuration loader already refuses them at start
    ///     (`EnvironmentReader.reservedAuthParams` and `unsupportedAuthParams`, exit 64).
    ///   - random: the CSPRNG for `state`, `nonce` (32 bytes each) and the 32-byte verifier.
    public static func make(metadata: ProviderMetadata, clientID: String, redirectURI: String, scopes: [String],
                            extraParameters: [(String, String)],
                            random: RandomBytes = .system) -> (url: String, login: PendingLoginSecrets) {
        let (parameters, login) = parameters(clientID: clientID, redirectURI: redirectURI, scopes: scopes,
                                             extraParameters: extraParameters, random: random)
        return (PercentEncoding.appendingQuery(parameters, to: metadata.authorizationEndpoint), login)
    }

    /// The request's parameters (what `make` puts in the URL, and what PAR pushes), with its secrets.
    /// - Parameter responseMode: `form_post` for the Form Post Response Mode; nil for the default (query).
    /// - Parameter openIDConnect: false for a plain OAuth 2.0 provider (GitHub): no `openid` scope,
    ///   no `nonce` (there is no ID token to carry it back).
    public static func parameters(clientID: String, redirectURI: String, scopes: [String], extraParameters: [(String, String)],
                                  responseMode: String? = nil, openIDConnect: Bool = true,
                                  random: RandomBytes = .system) -> (parameters: [(String, String)], login: PendingLoginSecrets) {
        let login = PendingLoginSecrets(state: RandomToken.make(bytes: 32, random: random),
                                        nonce: RandomToken.make(bytes: 32, random: random),
                                        codeVerifier: CodeVerifier.make(random: random))
        let challenge = CodeChallenge.s256(for: login.codeVerifier)
        var parameters: [(String, String)] = [
            ("response_type", "code"),
            ("client_id", clientID),
            ("redirect_uri", redirectURI),
            ("scope", openIDConnect ? scopeValue(scopes) : scopes.joined(separator: " ")),
            ("state", login.state),
            ("nonce", login.nonce),
            ("code_challenge", challenge.value),
            ("code_challenge_method", challenge.method.rawValue),
        ]
        if !openIDConnect { parameters.removeAll { $0.0 == "nonce" } }
        if let responseMode { parameters.append(("response_mode", responseMode)) }
        parameters += extraParameters.filter { !reservedParameterNames.contains($0.0) }
        return (parameters, login)
    }

    /// The browser's URL after a pushed request (RFC 9126 §4): `client_id` and `request_uri` only.
    public static func pushedURL(metadata: ProviderMetadata, clientID: String, requestURI: String) -> String {
        PercentEncoding.appendingQuery([("client_id", clientID), ("request_uri", requestURI)], to: metadata.authorizationEndpoint)
    }

    /// The `scope` value: `openid` first, then each other scope once, in the given order.
    public static func scopeValue(_ scopes: [String]) -> String {
        var seen: Set<String> = ["openid"]
        var ordered = ["openid"]
        for scope in scopes.flatMap({ $0.split(whereSeparator: { $0 == " " || $0 == "\t" }) }).map(String.init)
        where seen.insert(scope).inserted {
            ordered.append(scope)
        }
        return ordered.joined(separator: " ")
    }
}

/// RP-Initiated Logout (OpenID Connect RP-Initiated Logout 1.0 §2).
public enum EndSessionRequest {
    /// The provider's `end_session_endpoint` with `id_token_hint`, `post_logout_redirect_uri`,
    /// `client_id` and `state`, or `nil` when the provider has no such endpoint (SPEC: then redirect
    /// to `/`). `state` (§2) is sent because some providers (Glewlwyd) redirect back to
    /// `post_logout_redirect_uri` only when it is present; the gateway gives a fresh random value
    /// and needs nothing back from it.
    public static func url(metadata: ProviderMetadata, idTokenHint: String?, postLogoutRedirectURI: String,
                           clientID: String, state: String? = nil) -> String? {
        guard let endpoint = metadata.endSessionEndpoint else { return nil }
        var parameters: [(String, String)] = []
        if let idTokenHint { parameters.append(("id_token_hint", idTokenHint)) }
        parameters.append(("post_logout_redirect_uri", postLogoutRedirectURI))
        parameters.append(("client_id", clientID))
        if let state { parameters.append(("state", state)) }
        return PercentEncoding.appendingQuery(parameters, to: endpoint)
    }
}
