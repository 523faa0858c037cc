import HTTP1
import HTTPServer
import Logging

/// Token revocation (RFC 7009) and the userinfo endpoint (OpenID Connect Core §5.3).
extension DevProvider {
    func revocationEndpoint(_ request: HTTPRequest) async -> HTTPResponse {
        do throws(OAuthError) {
            let form = try await readForm(request)
            let client = try ClientAuthentication.authenticate(headers: request.head.headers, parameters: form, clients: clients)
            guard let token = form["token"] else { throw OAuthError(.invalidRequest, "token is required") }
            let now = self.now
            let outcome = state.withLock { state in
                state.statistics.revocations += 1
                if form["token_type_hint"] == "access_token" { state.statistics.accessTokenRevocations += 1 }
                return state.revoke(token, hint: form["token_type_hint"], clientID: client.id, now: now)
            }
            logger.info("revocation request", metadata: [
                "oauth.client_id": "\(client.id)", "oauth.revocation": "\(outcome)",
            ])
            // RFC 7009 §2.2: "invalid tokens do not cause an error response"; a token of another
            // client is left alone and the answer reveals nothing about it either.
            return HTTPResponse(status: 200, headers: ["Cache-Control": "no-store"])
        } catch {
            logger.info("revocation request refused", metadata: [
                "oauth.error": "\(error.code.rawValue)", "oauth.error_description": "\(error.description)",
            ])
            return error.tokenEndpointResponse
        }
    }

    /// Claims about the user, released by scope as in the ID token.
    struct UserInfoResponse: Encodable {
        var sub: String
        var name: String?
        var preferredUsername: String?
        var email: String?
        var emailVerified: Bool?
        var picture: String?
    }

    func userInfoEndpoint(_ request: HTTPRequest) -> HTTPResponse {
        // RFC 6750 §3: no credentials → a bare challenge; bad credentials → invalid_token.
        guard let authorization = request.head.headers["Authorization"] else {
            return ProviderResponse.plain(status: 401, "Unauthorized",
                                          extra: [("WWW-Authenticate", #"Bearer realm="devprovider""#)])
        }
        let parts = authorization.trimmingASCIIWhitespace().split(separator: " ", maxSplits: 1)
        let now = self.now
        // `DPoP` for a bound token (its proof is not checked here: a development provider).
        guard parts.count == 2, parts[0].asciiCaseInsensitiveEquals("Bearer") || parts[0].asciiCaseInsensitiveEquals("DPoP"),
              let authentication = state.withLock({ state in
                  state.authentication(forAccessToken: String(parts[1].trimmingASCIIWhitespace()), now: now)
              }) else {
            return ProviderResponse.plain(status: 401, "Unauthorized", extra: [(
                "WWW-Authenticate",
                #"Bearer realm="devprovider", error="invalid_token", error_description="unknown, expired or revoked access token""#)])
        }
        let claims = IDTokenClaims(authentication: authentication, nonce: nil, now: now, policy: policy)
        return ProviderResponse.json(UserInfoResponse(
            sub: claims.sub, name: claims.name, preferredUsername: claims.preferredUsername,
            email: claims.email, emailVerified: claims.emailVerified, picture: claims.picture))
    }
}
