import GatehouseOIDC
import GatehouseSessions
import HTTP1
import HTTPClient

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

/// A DPoP call's one second chance (RFC 9449 §9): the upstream's answer carries a new `DPoP-Nonce`
/// (remembered for the next calls) and asks for it (`401`, `use_dpop_nonce`): the same bodiless
/// request is sent once more, its proof carrying that nonce. Used where the answer arrives on the
/// loop (`LoopRelay`) and in the task (`ApiProxy.send`).
struct DPoPNonceRetry: Sendable {
    /// The upstream's origin (`scheme://host[:port]`), which its nonce is kept under.
    let origin: String
    let nonces: DPoPNonces
    /// The request again, with a proof for this nonce.
    let resend: @Sendable (_ nonce: String) -> UpstreamRequest
    /// Whether the request can be sent twice: nothing of its body was streamed.
    let bodiless: Bool

    /// The request to send instead of relaying the answer `head`, or nil.
    func retry(after head: HTTPResponseHead) -> UpstreamRequest? {
        guard let nonce = remembered(from: head) else { return nil }
        guard bodiless, DPoPKey.asksForNonce(status: head.status, body: nil, wwwAuthenticate: head.headers["WWW-Authenticate"]) else {
            return nil
        }
        return resend(nonce)
    }

    /// Keeps the nonce an answer gives (the second one's too), for the next calls to that upstream.
    @discardableResult
    func remembered(from head: HTTPResponseHead) -> String? {
        guard let nonce = head.headers["DPoP-Nonce"] else { return nil }
        nonces.remember(nonce, origin: origin)
        return nonce
    }
}
