import FoundationEssentials
import GatehouseSessions
import GatehouseCore
import GatehouseOIDC
import HTTP1
import HTTPServer

/// `POST /backchannel-logout` (`/backchannel-logout/NAME` with several providers): OpenID Connect
/// Back-Channel Logout 1.0 §2.5–2.8. The provider tells us a user's session ended; every matching
/// session of that provider goes. The token is verified with that provider's keys, issuer and client.
struct BackchannelLogoutEndpoint {
    let context: GatewayContext
    /// The provider name in the path; nil for `/backchannel-logout`, the `default` provider's.
    let path: String?

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        guard let provider = context.providers.provider(named: path ?? ProviderSettings.defaultName) else {
            return HTTPResponse.jsonError(status: 404, error: "not_found",
                                          description: "No provider of this name sends logout tokens here.")
        }
        let body: [UInt8]
        do {
            body = try await request.body.collect(limit: 64 * 1024)
        } catch {
            return invalid("The request body is missing or too large.")
        }
        guard let token = QueryParameters(form: body).single("logout_token"), !token.isEmpty else {
            return invalid("The logout_token form field is missing.")
        }
        let clients: ProviderClients
        do { clients = try await provider.connection.clients() } catch {
            return HTTPResponse.jsonError(status: 503, error: "temporarily_unavailable",
                                          description: "The provider's metadata is not loaded.")
        }
        let now = context.now()
        let claims: LogoutTokenClaims
        do {
            claims = try await clients.logoutTokens.validate(token, now: Date(timeIntervalSince1970: TimeInterval(now)))
        } catch {
            context.logger.warning("back-channel logout refused", metadata: ["error": "\(error)"])
            return invalid("The logout token is not valid.")
        }
        let match: LogoutTokenMatch
        if let sid = claims.sid { match = .sid(sid, provider: provider.name) }
        else if let sub = claims.sub { match = .sub(sub, provider: provider.name) }
        else { return invalid("The logout token names neither sid nor sub.") }
        do {
            // §2.6: a jti seen before is a replay. Recorded in the deletion's transaction: a failed
            // deletion records nothing, so the provider's retry of this token is honoured.
            guard let ended = try await context.sessions.endSessions(forLogoutToken: claims.jti, expiresAt: now + 3600,
                                                                     matching: match) else {
                context.logger.warning("back-channel logout replay refused")
                return invalid("The logout token was already used.")
            }
            context.logger.info("back-channel logout", metadata: ["sessions.ended": "\(ended)"])
        } catch {
            context.logger.error("back-channel logout: storage failed; no session ended",
                                 metadata: ["error": "\(error)"])
            return Responses.sessionStoreUnavailable()
        }
        return HTTPResponse(status: 200, headers: ["Cache-Control": "no-store"])
    }

    private func invalid(_ description: String) -> HTTPResponse {
        HTTPResponse.jsonError(status: 400, error: "invalid_request", description: description)
    }
}
