import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import HTTP1
import HTTPServer
import GatehouseEncoding

/// `POST /logout` (with the CSRF header) and `GET /logout?sid=…`: ends the session here and at the
/// provider (RFC 7009 revocation, OpenID RP-Initiated Logout 1.0). `POST /logout?everywhere=true`
/// ends every session of the user (same provider and `sub`) and revokes each one's tokens.
struct LogoutEndpoint {
    let context: GatewayContext

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        let head = request.head
        // `POST` carried the anti-forgery header (checked by the router, `RequestRoute`).
        let isGET = head.method == "GET"
        // A store that does not answer must not read as "no session": the logout would answer as
        // done and leave the cookie working once the store is back. Nothing is cleared then.
        let session: Session?
        do {
            if let id = await context.sessions.sessionID(in: head.headers) {
                session = try await context.sessions.resolve(idHash: id.hash, now: context.now(), slide: false)
            } else {
                session = nil
            }
        } catch {
            context.logger.error("logout: session lookup failed; nothing ended", metadata: ["error": "\(error)"])
            return Responses.sessionStoreUnavailable(html: isGET)
        }
        if isGET {
            // A top-level GET can be triggered by any site: only the sid from /user makes it ours.
            guard let sid = QueryParameters(head.query).single("sid"), let session,
                  ConstantTime.equals(sid, LogoutSID.value(for: session)) else {
                return HTMLPage.error(status: 400, title: "Sign-out refused",
                                      message: "This sign-out link is not valid for your session.")
            }
        }
        guard let session else {
            return Responses.redirect("/", cookies: [context.cookie.expire()])
        }
        let everywhere = !isGET && QueryParameters(head.query).single("everywhere") == "true"
        var others: [Session] = []
        do {
            if everywhere {
                // Every row of the user at this provider goes, the current one with them.
                others = try await context.sessions.endSessions(sub: session.sub, provider: session.provider, now: context.now())
                    .filter { $0.idHash != session.idHash }
            } else {
                try await context.sessions.endSession(idHash: session.idHash)
            }
        } catch {
            context.logger.error("logout: the session could not be deleted; nothing ended",
                                 metadata: ["session.id": "\(session.idHash.prefix(8))", "error": "\(error)"])
            return Responses.sessionStoreUnavailable(html: isGET)
        }
        context.metrics.activeSessions.nudge()
        context.logger.info(everywhere ? "logout everywhere" : "logout",
                            metadata: ["session.id": "\(session.idHash.prefix(8))", "sessions.ended": "\(others.count + 1)"])

        // The session's own provider: its tokens are revoked there and its session ended there.
        let provider = context.providers.provider(named: session.provider)
        let configuration = provider?.configuration ?? context.configuration
        let clients = provider?.connection.current
        if let clients, clients.metadata.revocationEndpoint != nil {
            // Every ended session's tokens, the other sessions' too: ended here, they must not live
            // on at the provider.
            await TokenRevocation.revoke([session] + others, with: clients.tokens,
                                         waitingAtMost: .seconds(configuration.providerTimeout), logger: context.logger)
        }
        var location = "/"
        if let clients, let url = EndSessionRequest.location(
            metadata: clients.metadata, logoutTemplate: configuration.logoutURL, idTokenHint: session.tokens.idToken,
            postLogoutRedirectURI: configuration.postLogoutRedirectURI, clientID: configuration.clientID,
            state: RandomToken.make(bytes: 16)) {
            location = url
        }
        return Responses.redirect(location, cookies: [context.cookie.expire()])
    }
}
