import GatehouseOIDC
import GatehouseSessions
import HTTP1

/// A DPoP-bound token on its way to an upstream (RFC 9449 §7): the session's key and the token,
/// so that the request gets its own proof (`htm`, `htu`, `ath`, the upstream's nonce) where its
/// method and URL are known, and again with a new nonce when the upstream asks for one.
struct UpstreamDPoP: Sendable {
    let key: DPoPKey
    /// The presented token's `ath`.
    let ath: String

    /// The binding of `authorization` (`DPoP <token>`) to the session's key; nil for anything else
    /// (a bearer token, the gateway's assertion, none). The session's own token's hash is made
    /// once per cached session; a token exchanged for the route is hashed here.
    init?(authorization: String?, session: CachedSession) {
        guard let authorization, Self.isBound(authorization), let binding = session.dpop else { return nil }
        key = binding.key
        // The session's own `Authorization` (the same string, compared at once) or an exchanged token.
        ath = authorization == binding.authorization ? binding.ath : DPoPKey.ath(String(authorization.utf8.dropFirst(5)) ?? "")
    }

    /// Whether an `Authorization` value presents a DPoP-bound token (`DPoP …`): one byte compared on
    /// the proxy's path, where almost every value is `Bearer …`.
    static func isBound(_ authorization: String) -> Bool {
        authorization.utf8.first == UInt8(ascii: "D") && authorization.hasPrefix("DPoP ")
    }

    /// The `DPoP` field for `method` on `url`.
    func proofField(method: String, url: String, nonce: String?, now: Int64) -> HTTPField.Checked? {
        HTTPField.Checked(name: "DPoP", value: key.proof(method: method, url: url, nonce: nonce, ath: ath, now: now))
    }
}

/// A DPoP session's key, its `Authorization` value (`DPoP <token>`) and that token's `ath`, as
/// ``CachedSession`` keeps them.
struct SessionDPoP: Sendable {
    let key: DPoPKey
    let authorization: String
    let ath: String
}
