import FoundationEssentials
import Synchronization

/// Sign in with Apple's client secret: not a configured string but an ES256 JWT the client signs
/// with its `.p8` key ("Creating a client secret": header `kid` the key id; `iss` the team id,
/// `sub` the client id (the Services ID), `aud` `https://appleid.apple.com`, `iat`, and `exp` at
/// most six months later). One is kept and used for every token request until a quarter of its
/// lifetime is left, then the next is signed.
public final class AppleClientSecret: Sendable {
    public static let audience = "https://appleid.apple.com"
    /// Apple's upper bound on `exp - iat` (15777000 s, six months).
    public static let maximumLifetime: Int64 = 15_777_000

    public let teamID: String
    public let clientID: String
    /// How long each secret is valid: a day, far under Apple's bound, so a leaked one is short-lived.
    public let lifetime: Int64
    private let key: ClientSigningKey
    private let current = Mutex<(secret: String, expiresAt: Int64)?>(nil)

    /// - Parameter key: the P-256 key of the `.p8` file, with its key id.
    public init(teamID: String, clientID: String, key: ClientSigningKey, lifetime: Int64 = 86_400) {
        self.teamID = teamID
        self.clientID = clientID
        self.key = key
        self.lifetime = min(max(lifetime, 60), Self.maximumLifetime)
    }

    /// The secret to send now: the kept one while more than a quarter of its lifetime is left.
    public func secret(now: Date) async throws(TokenEndpointError) -> String {
        let seconds = Int64(now.timeIntervalSince1970)
        if let kept = current.withLock({ $0 }), kept.expiresAt - seconds > lifetime / 4 { return kept.secret }
        let claims = RawClaims(claims: [
            "iss": .string(teamID), "sub": .string(clientID), "aud": .string(Self.audience),
            "iat": .number(Double(seconds)), "exp": .number(Double(seconds + lifetime)),
        ])
        let signed = try await key.sign(claims)
        current.withLock { $0 = (signed, seconds + lifetime) }
        return signed
    }
}
