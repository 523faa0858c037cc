import HTTP1
import HTTPServer
import Logging

/// The authorization endpoint (RFC 6749 §3.1): `GET` shows the sign-in form, `POST` is the user's
/// answer and redirects back to the client with a code or an error.
extension DevProvider {
    func authorizationPage(query: Substring?) -> HTTPResponse {
        let parameters: FormParameters
        do {
            parameters = try FormParameters(encoded: query ?? "")
        } catch {
            return ProviderResponse.html(status: 400, ProviderPages.error("The request's query is not valid URL encoding."))
        }
        switch validatedRequest(parameters) {
        case .refusal(let refusal):
            return refusal
        case .request(let request):
            return ProviderResponse.html(signInPage(for: request))
        }
    }

    func authorizationDecision(_ httpRequest: HTTPRequest) async -> HTTPResponse {
        let form: FormParameters
        do throws(OAuthError) {
            form = try await readForm(httpRequest)
        } catch {
            return ProviderResponse.html(status: 400, ProviderPages.error(error.description))
        }
        let request: AuthorizationRequest
        switch validatedRequest(form) {
        case .refusal(let refusal): return refusal
        case .request(let validated): request = validated
        }
        if form["action"] == "deny" {
            logger.info("authorization denied by the user", metadata: ["oauth.client_id": "\(request.clientID)"])
            return redirect(request.redirectURI, error: OAuthError(.accessDenied, "the user denied the request"),
                            state: request.state)
        }
        let user: DevUser
        switch SignInFormValidation.user(username: form["username"], email: form["email"]) {
        case .failure(let problem):
            return ProviderResponse.html(status: 400, signInPage(for: request, problem: problem.message,
                                                                  username: form["username"] ?? "",
                                                                  email: form["email"] ?? ""))
        case .success(let valid):
            user = valid
        }
        let now = self.now
        let code = state.withLock { $0.issueCode(for: request, user: user, now: now, policy: policy) }
        logger.info("authorization code issued", metadata: [
            "oauth.client_id": "\(request.clientID)", "oauth.sub": "\(user.subject)",
        ])
        // RFC 9207 §2: the issuer goes with every authorization response, success or error.
        return ProviderResponse.redirect(to: FormEncoding.appendingQuery(
            [("code", code), ("state", request.state), ("iss", configuration.issuer)], to: request.redirectURI))
    }

    private func validatedRequest(_ parameters: FormParameters) -> Validated {
        do throws(AuthorizationRequestError) {
            return .request(try AuthorizationRequestValidation.validate(parameters, clients: clients))
        } catch {
            switch error {
            case .notRedirectable(let message):
                logger.info("authorization request refused", metadata: ["oauth.error": "\(message)"])
                return .refusal(ProviderResponse.html(status: 400, ProviderPages.error(message)))
            case .redirectable(let error, let redirectURI, let state):
                logger.info("authorization request refused", metadata: [
                    "oauth.error": "\(error.code.rawValue)", "oauth.error_description": "\(error.description)",
                ])
                return .refusal(redirect(redirectURI, error: error, state: state))
            }
        }
    }

    /// A validated request, or the answer that refuses it.
    private enum Validated {
        case request(AuthorizationRequest)
        case refusal(HTTPResponse)
    }

    private func redirect(_ redirectURI: String, error: OAuthError, state: String?) -> HTTPResponse {
        ProviderResponse.redirect(to: FormEncoding.appendingQuery([
            ("error", error.code.rawValue), ("error_description", error.description),
            ("state", state), ("iss", configuration.issuer),
        ], to: redirectURI))
    }

    private func signInPage(for request: AuthorizationRequest, problem: String? = nil,
                            username: String = "", email: String = "") -> String {
        ProviderPages.signIn(formAction: Self.issuerPath(configuration.issuer) + "/authorize",
                             clientID: request.clientID, scopes: request.scopes,
                             hiddenFields: AuthorizationRequestValidation.hiddenFields(of: request),
                             problem: problem, username: username, email: email)
    }
}

