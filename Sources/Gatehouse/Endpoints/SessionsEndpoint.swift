import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import HTTP1
import HTTPServer

/// "My sessions" (SPEC "Sessions the SPA controls"): `GET /sessions` lists the signed-in user's
/// sessions (same provider and `sub`) under their public handles, `POST /sessions/revoke`
/// `{"handle":…}` ends one of them. Both carry the CSRF header (checked by the plan's gate). A handle
/// is never the cookie nor its hash, and another user's handle is `404` like one that never was.
struct SessionsEndpoint {
    let context: GatewayContext

    func list(_ request: HTTPRequest) async -> HTTPResponse {
        await signedIn(request) { current in await list(for: current) }
    }

    private func list(for current: Session) async -> HTTPResponse {
        let sessions: [UserSession]
        do {
            sessions = try await context.sessions.listSessions(sub: current.sub, provider: current.provider, now: context.now())
        } catch {
            context.logger.error("sessions: listing failed", metadata: ["error": "\(error)"])
            return Responses.sessionStoreUnavailable()
        }
        let entries = sessions.map { entry in
            "{\"handle\":\(JSONString.quoted(entry.handle)),\"createdAt\":\(entry.createdAt),\"lastSeenAt\":\(max(entry.lastSeenAt, entry.idHash == current.idHash ? context.now() : 0)),"
                + "\"userAgent\":\(entry.userAgent.map(JSONString.quoted) ?? "null"),\"current\":\(entry.idHash == current.idHash)}"
        }
        return Responses.json(200, Array("{\"sessions\":[\(entries.joined(separator: ","))]}".utf8))
    }

    func revoke(_ request: HTTPRequest) async -> HTTPResponse {
        await signedIn(request) { current in await revoke(request, by: current) }
    }

    private func revoke(_ request: HTTPRequest, by current: Session) async -> HTTPResponse {
        let body: [UInt8]
        do { body = try await request.body.collect(limit: 4 * 1024) } catch {
            return HTTPResponse.jsonError(status: 400, error: "invalid_request", description: "The request body is missing or too large.")
        }
        guard case .object(let object)? = try? JSONValue.parse(body), case .string(let handle)? = object["handle"],
              UserSession.isWellFormedHandle(handle) else {
            return HTTPResponse.jsonError(status: 400, error: "invalid_request",
                                          description: "The body must be a JSON object with a session \"handle\".")
        }
        let ended: String?
        let target: Session?
        do {
            // Its tokens, read before it ends: they are revoked at the provider afterwards.
            target = try await session(handle: handle, of: current)
            ended = try await context.sessions.endSession(handle: handle, sub: current.sub, provider: current.provider)
        } catch {
            context.logger.error("sessions: revoke failed; nothing ended", metadata: ["error": "\(error)"])
            return Responses.sessionStoreUnavailable()
        }
        guard let ended else {
            return HTTPResponse.jsonError(status: 404, error: "not_found", description: "You have no session with this handle.")
        }
        context.metrics.activeSessions.nudge()
        context.logger.info("session revoked by its user", metadata: ["session.id": "\(ended.prefix(8))",
                                                                      "by.session.id": "\(current.idHash.prefix(8))"])
        if let target, target.idHash == ended, let provider = context.providers.provider(named: target.provider),
           let clients = provider.connection.current, clients.metadata.revocationEndpoint != nil {
            await TokenRevocation.revoke([target], with: clients.tokens,
                                         waitingAtMost: .seconds(provider.configuration.providerTimeout), logger: context.logger)
        }
        var response = Responses.json(200, Array("{\"revoked\":true,\"current\":\(ended == current.idHash)}".utf8))
        if ended == current.idHash { response.headers.add("Set-Cookie", context.cookie.expire()) }
        return response
    }

    /// The user's session with public handle `handle`, with its tokens; nil when there is none.
    private func session(handle: String, of current: Session) async throws(SessionStoreError) -> Session? {
        let now = context.now()
        guard let entry = try await context.sessions.listSessions(sub: current.sub, provider: current.provider, now: now)
            .first(where: { $0.handle == handle }) else { return nil }
        return try await context.sessions.loadStored(idHash: entry.idHash, now: now)
    }

    /// `respond` to the request's signed-in session, or the answer saying why there is none.
    private func signedIn(_ request: HTTPRequest, _ respond: (Session) async -> HTTPResponse) async -> HTTPResponse {
        guard let id = await context.sessions.sessionID(in: request.head.headers) else { return Responses.unauthenticated }
        let session: Session?
        do {
            session = try await context.sessions.resolve(idHash: id.hash, now: context.now())
        } catch {
            context.logger.error("sessions: session lookup failed", metadata: ["error": "\(error)"])
            return Responses.sessionStoreUnavailable()
        }
        guard let session else { return Responses.unauthenticated }
        return await respond(session)
    }
}
