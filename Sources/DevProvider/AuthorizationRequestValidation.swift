import FoundationEssentials
import GatehouseEncoding

/// Why an authorization request was refused, and whether the refusal may go back to the client.
enum AuthorizationRequestError: Error, Equatable, Sendable {
    /// RFC 6749 §4.1.2.1: with a missing, invalid or unregistered client or redirect URI the server
    /// "MUST NOT automatically redirect the user-agent"; it shows an error page instead.
    case notRedirectable(String)
    /// Every other error goes back to the client's redirect URI as `error`, `state` and `iss`.
    case redirectable(OAuthError, redirectURI: String, state: String?)
}

/// Validates `GET /authorize` parameters (and the same parameters again on `POST /authorize`).
enum AuthorizationRequestValidation {
    static func validate(_ parameters: FormParameters,
                         clients: [String: DevClient]) throws(AuthorizationRequestError) -> AuthorizationRequest {
        let repeated = parameters.firstRepeatedName
        if repeated == "client_id" || repeated == "redirect_uri" {
            throw .notRedirectable("The parameter \(repeated ?? "") is repeated.")
        }
        guard let clientID = parameters["client_id"] else {
            throw .notRedirectable("The request has no client_id.")
        }
        guard let client = clients[clientID] else {
            throw .notRedirectable("The client \(clientID) is not registered at this provider.")
        }
        guard let redirectURI = parameters["redirect_uri"] else {
            throw .notRedirectable("The request has no redirect_uri.")
        }
        // RFC 9700 §4.1.3: exact string matching, nothing looser.
        guard client.redirectURIs.contains(redirectURI) else {
            throw .notRedirectable("The redirect_uri \(redirectURI) is not registered for the client \(clientID).")
        }
        let state = parameters["state"]
        func refuse(_ code: OAuthErrorCode, _ description: String) -> AuthorizationRequestError {
            .redirectable(OAuthError(code, description), redirectURI: redirectURI, state: state)
        }
        if let repeated { throw refuse(.invalidRequest, "parameter \(repeated) is repeated") }
        switch parameters["response_type"] {
        case nil: throw refuse(.invalidRequest, "response_type is required")
        case "code": break
        case let other?: throw refuse(.unsupportedResponseType, "response_type \(other) is not supported; use code")
        }
        let scopes = (parameters["scope"] ?? "").split(separator: " ").map(String.init)
        guard scopes.contains("openid") else {
            throw refuse(.invalidScope, "scope must include openid")
        }
        guard parameters["code_challenge_method"] == "S256" else {
            throw refuse(.invalidRequest, "PKCE is required with code_challenge_method=S256")
        }
        guard let challenge = parameters["code_challenge"] else {
            throw refuse(.invalidRequest, "code_challenge is required")
        }
        guard PKCE.isValidChallenge(challenge) else {
            throw refuse(.invalidRequest, "code_challenge must be 43 to 128 unreserved characters")
        }
        // OpenID Connect Core §3.1.2.1: `prompt=none` must not show a page; there is never an
        // existing session here, so the answer is always login_required.
        if let prompt = parameters["prompt"], prompt.split(separator: " ").contains("none") {
            throw refuse(.loginRequired, "prompt=none: the development provider always asks to sign in")
        }
        return AuthorizationRequest(clientID: clientID, redirectURI: redirectURI, scopes: scopes,
                                    state: state, nonce: parameters["nonce"], codeChallenge: challenge)
    }

    /// The request as hidden form fields, so `POST /authorize` receives it back whole.
    static func hiddenFields(of request: AuthorizationRequest) -> [(String, String)] {
        var fields: [(String, String)] = [
            ("response_type", "code"), ("client_id", request.clientID), ("redirect_uri", request.redirectURI),
            ("scope", request.scopes.joined(separator: " ")),
        ]
        if let state = request.state { fields.append(("state", state)) }
        if let nonce = request.nonce { fields.append(("nonce", nonce)) }
        fields.append(("code_challenge", request.codeChallenge))
        fields.append(("code_challenge_method", "S256"))
        return fields
    }
}

/// Checks the sign-in form's own fields.
enum SignInFormValidation {
    static func user(username rawUsername: String?, email rawEmail: String?) -> Result<DevUser, SignInProblem> {
        let username = (rawUsername ?? "").trimmingWhitespace()
        guard !username.isEmpty else { return .failure(SignInProblem("Enter a user name.")) }
        guard username.count <= 64, !username.unicodeScalars.contains(where: isControlOrSpaceSeparator) else {
            return .failure(SignInProblem("A user name is at most 64 characters, without spaces or control characters."))
        }
        let email = (rawEmail ?? "").trimmingWhitespace()
        guard !email.isEmpty else { return .success(DevUser(username: username, email: nil)) }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.count <= 254, parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
              !email.unicodeScalars.contains(where: isControlOrSpaceSeparator) else {
            return .failure(SignInProblem("That email address does not look valid."))
        }
        return .success(DevUser(username: username, email: email))
    }

    private static func isControlOrSpaceSeparator(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || scalar.properties.isWhitespace
    }
}

struct SignInProblem: Error, Equatable {
    var message: String
    init(_ message: String) { self.message = message }
}
