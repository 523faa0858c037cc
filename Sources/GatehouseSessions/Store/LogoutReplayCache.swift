/// Which sessions a back-channel logout token names (OpenID Connect Back-Channel Logout 1.0 §2.4):
/// those of the provider session `sid` when the token has one, else every session of `sub`; always
/// of one provider (the same `sub` at another provider is another user).
public enum LogoutTokenMatch: Sendable, Equatable {
    case sid(String, provider: String = "default")
    case sub(String, provider: String = "default")

    /// The provider whose sessions are meant.
    public var provider: String {
        switch self {
        case .sid(_, let provider), .sub(_, let provider): provider
        }
    }
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

/// The key a logout token's `jti` is remembered under: its hash, within its provider (two providers
/// may issue the same `jti`; `default`'s keys are those stored before there were several).
enum LogoutJTI {
    static func hash(_ jti: String, provider: String) -> String {
        SecretHash.hex(of: provider == "default" ? jti : provider + "\u{0}" + jti)
    }
}
