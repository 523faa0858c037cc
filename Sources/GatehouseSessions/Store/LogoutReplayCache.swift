/// Which sessions a back-channel logout token names (OpenID Connect Back-Channel Logout 1.0 §2.4):
/// those of the provider session `sid` when the token has one, else every session of `sub`.
public enum LogoutTokenMatch: Sendable, Equatable {
    case sid(String)
    case sub(String)
}

/// The replay-cache role of a store: back-channel logout token ids (`jti`) already seen, kept until
/// the token could no longer be accepted (OpenID Connect Back-Channel Logout 1.0 §2.6).
public protocol LogoutReplayCache: Sendable {
    /// Remembers a back-channel logout token's `jti` until `expiresAt` and deletes the sessions it
    /// names, in one transaction: when the deletion fails nothing is recorded, so the provider's
    /// retry of the same token is not refused as a replay.
    /// - Returns: how many sessions were deleted, or nil when the `jti` was already recorded (a
    ///   replay; nothing is deleted).
    func endSessions(forLogoutToken jti: String, expiresAt: Int64,
                     matching match: LogoutTokenMatch) throws(SessionStoreError) -> Int?
}
