import GatehouseCore
import GatehouseSessions
import HTTP1
import HTTPServer

/// `GET /user`: who is signed in, for the SPA. Never returns a token.
struct UserEndpoint {
    let context: GatewayContext

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        // `slide=false` lets the SPA poll the session's state without keeping it alive.
        let slide = QueryParameters(request.head.query).single("slide") != "false"
        guard let id = await context.sessions.sessionID(in: request.head.headers) else { return Responses.unauthenticated }
        let session: Session
        do {
            guard let found = try await context.sessions.resolve(idHash: id.hash, now: context.now(), slide: slide) else {
                return Responses.unauthenticated
            }
            session = found
        } catch {
            context.logger.error("user: session lookup failed", metadata: ["error": "\(error)"])
            return Responses.sessionStoreUnavailable()
        }
        if AccessTokenExpiry.hasEnded(session.tokens, now: context.now()) {
            return await AccessTokenExpiry.end(session, context: context)
        }
        var body: [UInt8] = []
        body.append(contentsOf: Array("{\"sub\":".utf8))
        body.append(contentsOf: Array(JSONString.quoted(session.sub).utf8))
        body.append(contentsOf: Array(",\"provider\":".utf8))
        body.append(contentsOf: Array(JSONString.quoted(session.provider).utf8))
        body.append(contentsOf: Array(",\"claims\":".utf8))
        body.append(contentsOf: session.claims.isEmpty ? Array("{}".utf8) : session.claims)
        body.append(contentsOf: Array(",\"session\":{\"expiresAt\":\(session.expiresAt),\"idleExpiresAt\":\(session.idleExpiresAt)".utf8))
        // Without a refresh token the session ends with the access token: the SPA sees when.
        let accessExpiry = session.tokens.accessTokenExpiresAt.map(String.init) ?? "null"
        body.append(contentsOf: Array(",\"accessTokenExpiresAt\":\(accessExpiry),\"refreshable\":\(session.tokens.refreshToken != nil)}".utf8))
        let logoutURL = "/logout?sid=" + LogoutSID.encoded(for: session)
        body.append(contentsOf: Array(",\"logoutUrl\":".utf8))
        body.append(contentsOf: Array(JSONString.quoted(logoutURL).utf8))
        body.append(UInt8(ascii: "}"))
        return Responses.json(200, body)
    }
}

/// The `sid` that `GET /logout` requires: the provider's session id when it sent one (as Duende BFF
/// does), else a value derived from the session's hash. Either way a cross-site page cannot know it.
enum LogoutSID {
    static func value(for session: Session) -> String {
        if let sid = session.sid, !sid.isEmpty { return sid }
        return String(SecretHash.hex(of: "gatehouse-logout-sid:" + session.idHash).prefix(32))
    }

    static func encoded(for session: Session) -> String {
        var out = ""
        for byte in value(for: session).utf8 {
            let unreserved = (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || (byte >= 48 && byte <= 57)
                || byte == 45 || byte == 46 || byte == 95 || byte == 126
            if unreserved {
                out.append(Character(Unicode.Scalar(byte)))
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
