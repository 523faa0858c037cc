import GatehouseSessions

/// A session as `SessionCache` keeps it, with the `Authorization` value for its access token built
/// once. Immutable and shared by reference: a cache hit copies one reference, not the session's
/// strings and arrays; a changed session (new tokens) gets a new one.
final class CachedSession: Sendable {
    let session: Session
    /// `Bearer <access token>`.
    let authorization: String

    init(_ session: Session) {
        self.session = session
        authorization = "Bearer \(session.tokens.accessToken)"
    }
}
