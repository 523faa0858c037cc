import Crypto
import GatehouseCore
import GatehouseEncoding
import HTTP1

/// The checks of a proxied WebSocket handshake (RFC 6455 §4), as pure functions: which requests
/// are handshakes, whether the browser's is well-formed and comes from our own origin, which fields
/// go upstream and back, and whether the upstream's `101` really accepts this handshake.
///
/// Browsers cannot add headers to a WebSocket handshake, so the CSRF header cannot protect it; the
/// `Origin` (which a browser always sends on a WebSocket handshake and a page cannot forge) must be
/// `GATEHOUSE_PUBLIC_URL`'s origin instead (cross-site WebSocket hijacking).
///
/// For example: `WebSocketHandshake.isUpgrade(head)`, then `validate(head.headers)` gives the key.
public enum WebSocketHandshake {
    /// RFC 6455 §1.3: the GUID appended to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    static let version = "13"

    /// An HTTP/1.1 `GET` asking to switch to `websocket` (§4.1: HTTP/1.0 has no protocol switch):
    /// handled as a WebSocket handshake, not an API call.
    static func isUpgrade(_ head: HTTPRequestHead) -> Bool {
        isUpgrade(method: head.method, version: head.version, headers: head.headers)
    }

    /// As above from the head's parts (the router passes these, not a copy of the head).
    static func isUpgrade(method: String, version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        method == "GET" && version == .http1_1 && headers.hasToken("Upgrade", "websocket")
    }

    /// Why a browser's handshake is refused before any session or upstream work.
    enum Refusal: Error, Equatable {
        /// `400`: not a well-formed RFC 6455 handshake (the reason names the field).
        case malformed(String)
        /// `426` with `Sec-WebSocket-Version: 13`: a version we do not speak (§4.4).
        case unsupportedVersion
    }

    /// Checks the browser's handshake fields; returns its `Sec-WebSocket-Key`.
    static func validate(_ headers: HTTPHeaders) -> Result<String, Refusal> {
        guard headers.hasToken("Connection", "upgrade") else { return .failure(.malformed("Connection must list upgrade")) }
        let versions = headers.values("Sec-WebSocket-Version")
        guard versions.count == 1, versions[0].trimmingASCIIWhitespace() == version[...] else {
            return .failure(.unsupportedVersion)
        }
        let keys = headers.values("Sec-WebSocket-Key")
        guard keys.count == 1 else { return .failure(.malformed("exactly one Sec-WebSocket-Key is required")) }
        let key = String(keys[0].trimmingASCIIWhitespace())
        // §4.1: a nonce of 16 random bytes, base64-encoded (24 characters with padding).
        guard key.utf8.count == 24, key.hasSuffix("=="), let nonce = Base64.decode(key), nonce.count == 16 else {
            return .failure(.malformed("Sec-WebSocket-Key must be 16 bytes in base64"))
        }
        return .success(key)
    }

    /// True when the request's one `Origin` is `publicOrigin` or one of `GATEHOUSE_CORS_ORIGINS`
    /// (scheme and host compared without regard to case, as browsers serialise them in lower case
    /// anyway). A missing, `null`, repeated or foreign origin is refused.
    static func originAllowed(_ headers: HTTPHeaders, publicOrigin: String, cors: CORSPolicy = .none) -> Bool {
        let origins = headers.values("Origin")
        guard origins.count == 1 else { return false }
        return origins[0].trimmingASCIIWhitespace().asciiCaseInsensitiveEquals(publicOrigin)
            || cors.allowedOrigin(origins[0][...]) != nil
    }

    /// `Sec-WebSocket-Accept` for `key`: base64(SHA-1(key + GUID)) (§4.2.2 item 5.4).
    public static func accept(forKey key: String) -> String {
        Base64.encode(Insecure.SHA1.hash(data: Array((key + guid).utf8)))
    }

    /// The fields sent upstream: what the proxy policy keeps for any API call (no cookies, no
    /// browser `Authorization`, the bearer and forwarding fields added), plus the two hop-by-hop
    /// fields the switch needs. `Sec-WebSocket-*` and `Origin` pass as the browser sent them.
    static func upstreamHeaders(_ policyHeaders: HTTPHeaders) -> HTTPHeaders {
        var headers = policyHeaders
        headers.add("Connection", "Upgrade")
        headers.add("Upgrade", "websocket")
        return headers
    }

    /// Checks the upstream's `101` against the key sent; nil when it accepts this handshake, else
    /// what is wrong (the gateway answers `502` and closes the connection).
    static func upstreamProblem(_ head: HTTPResponseHead, key: String) -> String? {
        guard head.status == 101 else { return "status \(head.status)" }
        guard head.headers.hasToken("Upgrade", "websocket") else { return "101 without Upgrade: websocket" }
        guard head.headers.hasToken("Connection", "upgrade") else { return "101 without Connection: upgrade" }
        let accepts = head.headers.values("Sec-WebSocket-Accept")
        guard accepts.count == 1, accepts[0].trimmingASCIIWhitespace() == accept(forKey: key)[...] else {
            return "Sec-WebSocket-Accept does not match the key"
        }
        return nil
    }

    /// The `101` head for the browser: the upstream's fields minus hop-by-hop ones and cookies,
    /// with `Upgrade: websocket` (the server adds `Connection: Upgrade`).
    static func browserHead(from upstream: HTTPResponseHead) -> HTTPResponseHead {
        var headers = ProxyHeaderPolicy.downstreamResponseHeaders(from: upstream.headers)
        headers.add("Upgrade", "websocket")
        return HTTPResponseHead(status: 101, headers: headers)
    }
}
