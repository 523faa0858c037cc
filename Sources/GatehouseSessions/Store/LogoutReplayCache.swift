/// The replay-cache role of a store: back-channel logout token ids (`jti`) already seen, kept until
/// the token could no longer be accepted (OpenID Connect Back-Channel Logout 1.0 §2.6).
public protocol LogoutReplayCache: Sendable {
    /// Remembers a back-channel logout token's `jti` until `expiresAt`.
    /// - Returns: false when the `jti` was already recorded (a replay).
    func recordLogoutJTI(_ jti: String, expiresAt: Int64) throws(SessionStoreError) -> Bool

}
