import GatehouseOIDC
import GatehouseSessions

/// How a session's tokens are presented when they are bound to its DPoP key (RFC 9449): the key
/// sealed with the session, the scheme `DPoP` instead of `Bearer`, a proof per use.
enum DPoPBinding {
    /// The session's key, when it has one.
    static func key(of tokens: TokenSet) -> DPoPKey? {
        tokens.dpopKey.flatMap(DPoPKey.init(stored:))
    }

    /// Whether a token of `tokenType` is bound (the provider answered `token_type=DPoP`).
    static func isBound(_ tokenType: String) -> Bool {
        tokenType.lowercased() == "dpop"
    }

    /// The key and nonces for a UserInfo call with a token of `tokenType`; nil for a bearer token.
    static func userinfo(_ tokenType: String, key: DPoPKey?, clients: ProviderClients) -> (key: DPoPKey, nonces: DPoPNonces)? {
        guard let key, isBound(tokenType) else { return nil }
        return (key, clients.tokens.dpopNonces)
    }

    /// The `Authorization` value for `accessToken` of `tokenType`.
    static func authorization(_ accessToken: String, tokenType: String) -> String {
        (isBound(tokenType) ? "DPoP " : "Bearer ") + accessToken
    }
}
