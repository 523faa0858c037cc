import HTTP1
import HTTPServer
import Logging

/// The token endpoint (RFC 6749 §3.2): `authorization_code` and `refresh_token` grants.
extension DevProvider {
    /// RFC 6749 §5.1 successful response.
    struct TokenResponse: Encodable {
        var accessToken: String
        var tokenType = "Bearer"
        var expiresIn: Int
        var refreshToken: String
        var idToken: String
        var scope: String
    }

    func tokenEndpoint(_ request: HTTPRequest) async -> HTTPResponse {
        let form: FormParameters
        let client: DevClient
        do throws(OAuthError) {
            form = try await readForm(request)
            client = try ClientAuthentication.authenticate(headers: request.head.headers, parameters: form, clients: clients)
        } catch {
            logger.info("token request refused", metadata: [
                "oauth.error": "\(error.code.rawValue)", "oauth.error_description": "\(error.description)",
            ])
            return error.tokenEndpointResponse
        }
        let grantType = form["grant_type"] ?? ""
        var metadata: Logger.Metadata = ["oauth.client_id": "\(client.id)", "oauth.grant_type": "\(grantType)"]
        do throws(OAuthError) {
            if let repeated = form.firstRepeatedName {
                throw OAuthError(.invalidRequest, "parameter \(repeated) is repeated")
            }
            // DPoP (RFC 9449): a valid proof makes the tokens DPoP-bound; an invalid one is refused.
            var tokenType = "Bearer"
            if let proof = request.head.headers["DPoP"] {
                _ = try DPoPProof.verify(proof, method: "POST", url: configuration.issuer + "/token", now: now)
                tokenType = "DPoP"
            }
            let tokens = try await grant(grantType, form: form, client: client)
            let idToken: String
            do {
                idToken = try await signingKey.sign(tokens.idTokenClaims)
            } catch {
                logger.info("could not sign an ID token", metadata: ["error": "\(String(describing: error))"])
                throw OAuthError(.serverError, "the ID token could not be signed")
            }
            metadata["oauth.sub"] = "\(tokens.idTokenClaims.sub)"
            logger.info("tokens issued", metadata: metadata)
            return ProviderResponse.json(TokenResponse(
                accessToken: tokens.accessToken, tokenType: tokenType, expiresIn: tokens.expiresIn, refreshToken: tokens.refreshToken,
                idToken: idToken, scope: tokens.scopes.joined(separator: " ")))
        } catch {
            state.withLock { $0.statistics.failedGrants += 1 }
            metadata["oauth.error"] = "\(error.code.rawValue)"
            metadata["oauth.error_description"] = "\(error.description)"
            logger.info("token request refused", metadata: metadata)
            return error.tokenEndpointResponse
        }
    }

    private func grant(_ grantType: String, form: FormParameters,
                       client: DevClient) async throws(OAuthError) -> IssuedTokens {
        switch grantType {
        case "authorization_code":
            state.withLock { $0.statistics.authorizationCodeGrants += 1 }
            guard let code = form["code"] else { throw OAuthError(.invalidRequest, "code is required") }
            let now = self.now
            return try state.withLock { (state) throws(OAuthError) -> IssuedTokens in
                try state.redeemCode(code, clientID: client.id, redirectURI: form["redirect_uri"],
                                     codeVerifier: form["code_verifier"], now: now, policy: policy)
            }
        case "refresh_token":
            let behaviour = state.withLock { state in
                state.statistics.refreshTokenGrants += 1
                return state.refreshBehaviour
            }
            switch behaviour {
            case .normal: break
            case .refuse: throw OAuthError(.invalidGrant, "refresh grants are refused (test behaviour)")
            case .refuseWith(let code):
                throw OAuthError(OAuthErrorCode(rawValue: code) ?? .invalidGrant, "refresh grants are refused (test behaviour)")
            case .delay(let duration): try? await Task.sleep(for: duration)
            }
            guard let refreshToken = form["refresh_token"] else {
                throw OAuthError(.invalidRequest, "refresh_token is required")
            }
            let scopes = form["scope"].map { $0.split(separator: " ").map(String.init) }
            let now = self.now
            return try state.withLock { (state) throws(OAuthError) -> IssuedTokens in
                try state.refresh(refreshToken, clientID: client.id, requestedScopes: scopes, now: now, policy: policy)
            }
        case "":
            throw OAuthError(.invalidRequest, "grant_type is required")
        default:
            throw OAuthError(.unsupportedGrantType, "grant_type \(grantType) is not supported")
        }
    }
}
