import GatehouseCore
import GatehouseSessions
import HTTP1

/// A session without a refresh token (Facebook; Google without offline access) lives as long as its
/// access token: once that has expired nothing can renew it, so `/user` and API calls answer the
/// same `401 session_expired` and the session is ended (SPEC "Without a refresh token").
enum AccessTokenExpiry {
    /// Whether the session can no longer be used: no refresh token, and the access token expired.
    static func hasEnded(_ tokens: TokenSet, now: Int64) -> Bool {
        guard let endsAt = endsAt(tokens) else { return false }
        return now >= endsAt
    }

    /// The second from which `hasEnded` holds; nil while a refresh token (or no expiry) keeps the
    /// session alive.
    static func endsAt(_ tokens: TokenSet) -> Int64? {
        tokens.refreshToken == nil ? tokens.accessTokenExpiresAt : nil
    }

    static let expired = HTTPResponse.jsonError(
        status: 401, error: "session_expired",
        description: "The sign-in has expired and the provider gave no refresh token; sign in again.")

    /// Ends the session and answers `401 session_expired` with the cookie cleared.
    static func end(_ session: Session, context: GatewayContext) async -> HTTPResponse {
        await context.sessions.dropEnded(idHash: session.idHash, reason: "access token expired without a refresh token")
        context.metrics.activeSessions.nudge()
        context.logger.info("session expired with its access token (no refresh token)",
                            metadata: ["session.id": "\(session.idHash.prefix(8))"])
        var response = expired
        response.headers.add("Set-Cookie", context.cookie.expire())
        return response
    }
}
