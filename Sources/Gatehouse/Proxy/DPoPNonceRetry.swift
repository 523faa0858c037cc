import GatehouseOIDC
import HTTP1
import HTTPClient

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
