/// A stored browser session: who is logged in, their tokens and ID token claims, and its clocks.
/// All times are unix seconds.
public struct Session: Sendable, Equatable {
    /// Hex SHA-256 of the session cookie value (`SessionID.hash`).
    public var idHash: String
    /// The ID token's `sub`.
    public var sub: String
    /// The provider's session id (`sid` claim), used by back-channel logout; nil when absent.
    public var sid: String?
    /// The ID token claims as raw JSON bytes (an object), so this module needs no OIDC types.
    public var claims: [UInt8]
    public var tokens: TokenSet
    public var createdAt: Int64
    public var lastSeenAt: Int64
    /// End of the sliding idle timeout; moved forward by `touch`.
    public var idleExpiresAt: Int64
    /// Absolute end of the session; never moves.
    public var expiresAt: Int64
    /// Bumped by every token update; `updateTokens` compares it (compare-and-swap).
    public var version: Int64
    /// The provider the session signed in with (`default` with one provider).
    public var provider: String

    public init(idHash: String, sub: String, sid: String?, claims: [UInt8], tokens: TokenSet,
                createdAt: Int64, lastSeenAt: Int64, idleExpiresAt: Int64, expiresAt: Int64, version: Int64,
                provider: String = "default") {
        self.provider = provider
        self.idHash = idHash
        self.sub = sub
        self.sid = sid
        self.claims = claims
        self.tokens = tokens
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.idleExpiresAt = idleExpiresAt
        self.expiresAt = expiresAt
        self.version = version
    }

    /// True while neither the idle timeout nor the absolute lifetime has passed at `now`.
    public func isActive(at now: Int64) -> Bool {
        SessionLifetime.isActive(idleExpiresAt: idleExpiresAt, expiresAt: expiresAt, now: now)
    }
}

extension Session: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String {
        "Session(id: \(idHash.prefix(8))…, provider: \(provider), sub: \(sub), createdAt: \(createdAt), idleExpiresAt: \(idleExpiresAt), "
            + "expiresAt: \(expiresAt), version: \(version))"
    }

    public var debugDescription: String { description }
}

/// What `SessionStore.createSession` needs; the store sets `lastSeenAt = createdAt`, `version = 1`.
public struct NewSession: Sendable, Equatable {
    public var idHash: String
    public var sub: String
    public var sid: String?
    public var claims: [UInt8]
    public var tokens: TokenSet
    public var createdAt: Int64
    public var idleExpiresAt: Int64
    public var expiresAt: Int64
    public var provider: String
    /// The public handle "my sessions" names it by (`UserSession`).
    public var handle: String
    /// The browser's `User-Agent` at login (`UserSession.recordedUserAgent`).
    public var userAgent: String?

    public init(idHash: String, sub: String, sid: String?, claims: [UInt8], tokens: TokenSet,
                createdAt: Int64, idleExpiresAt: Int64, expiresAt: Int64, provider: String = "default",
                handle: String = UserSession.newHandle(), userAgent: String? = nil) {
        self.provider = provider
        self.handle = handle
        self.userAgent = UserSession.recordedUserAgent(userAgent)
        self.idHash = idHash
        self.sub = sub
        self.sid = sid
        self.claims = claims
        self.tokens = tokens
        self.createdAt = createdAt
        self.idleExpiresAt = idleExpiresAt
        self.expiresAt = expiresAt
    }
}

extension NewSession: CustomStringConvertible {
    public var description: String { "NewSession(id: \(idHash.prefix(8))…, sub: \(sub))" }
}

/// The expiry rule every store applies: a session is over at its idle or absolute deadline.
public enum SessionLifetime {
    public static func isActive(idleExpiresAt: Int64, expiresAt: Int64, now: Int64) -> Bool {
        now < idleExpiresAt && now < expiresAt
    }

    /// The idle expiry a use at `now` slides a session to: `idleSeconds` later, never past its
    /// absolute expiry. The one rule for a new session and for every slide.
    public static func idleExpiry(slidAt now: Int64, idleSeconds: Int64, expiresAt: Int64) -> Int64 {
        min(saturatingAdd(now, idleSeconds), expiresAt)
    }
}
