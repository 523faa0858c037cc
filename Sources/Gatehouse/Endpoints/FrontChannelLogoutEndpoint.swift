import GatehouseCore
import GatehouseSessions
import HTTP1
import HTTPServer

/// `GET /frontchannel-logout` (`/frontchannel-logout/NAME` with several providers): OpenID Connect
/// Front-Channel Logout 1.0 §2–4. The provider's logout page loads this in a hidden iframe with its
/// `iss` and the user's `sid`; the browser's cookie does not come along (a cross-site iframe), so the
/// sessions are found by `sid`, and `iss` must be this provider's (a page of another provider
/// cannot end them). Back-channel logout is the better choice where the provider offers it: it
/// does not depend on the browser loading a frame, nor on third-party cookie rules.
struct FrontChannelLogoutEndpoint {
    let context: GatewayContext
    /// The provider name in the path; nil for `/frontchannel-logout`, the `default` provider's.
    let path: String?

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        guard let provider = context.providers.provider(named: path ?? ProviderSettings.defaultName) else {
            return page(400, frameAncestor: nil)
        }
        let issuer = provider.configuration.issuer
        let frameAncestor = (try? AbsoluteURL(parsing: issuer))?.origin
        let query = QueryParameters(request.head.query)
        guard let iss = query.single("iss"), let sid = query.single("sid"), !sid.isEmpty, sid.utf8.count <= 512 else {
            // §4: the RP ends the session named by `iss` and `sid`; without them there is nothing to match.
            return page(400, frameAncestor: frameAncestor)
        }
        guard iss == issuer else {
            context.logger.warning("front-channel logout refused: another issuer",
                                   metadata: ["oauth.provider": "\(provider.name)"])
            return page(400, frameAncestor: frameAncestor)
        }
        do {
            let ended = try await context.sessions.endSessions(sid: sid, provider: provider.name)
            context.logger.info("front-channel logout", metadata: ["oauth.provider": "\(provider.name)",
                                                                   "sessions.ended": "\(ended)"])
        } catch {
            context.logger.error("front-channel logout: storage failed; no session ended", metadata: ["error": "\(error)"])
            var unavailable = page(503, frameAncestor: frameAncestor)
            unavailable.headers.set("Retry-After", "5")
            return unavailable
        }
        return page(200, frameAncestor: frameAncestor)
    }

    /// An empty page only the provider may frame: `frame-ancestors` names its origin, and no
    /// `X-Frame-Options` (its `DENY` would stop the provider's frame) goes with it.
    private func page(_ status: Int, frameAncestor: String?) -> HTTPResponse {
        var headers: HTTPHeaders = [
            "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'none'; frame-ancestors \(frameAncestor ?? "'none'")",
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
        ]
        if let hsts = context.configuration.strictTransportSecurity { headers.add("Strict-Transport-Security", hsts) }
        return HTTPResponse(status: status, headers: headers, body: Array("<!doctype html><title>Signed out</title>".utf8))
    }
}
