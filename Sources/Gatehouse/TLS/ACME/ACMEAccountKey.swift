import Crypto
import GatehouseEncoding
import GatehouseOIDC

/// The ACME account's key (ES256, P-256) and the JWS requests it signs (RFC 8555 §6.2): the
/// `jwk` header for the account's creation, its URL (`kid`) after.
struct ACMEAccountKey: Sendable {
    let key: P256.Signing.PrivateKey

    init() { key = P256.Signing.PrivateKey() }

    init?(raw: [UInt8]) {
        guard let key = try? P256.Signing.PrivateKey(rawRepresentation: raw) else { return nil }
        self.key = key
    }

    var raw: [UInt8] { Array(key.rawRepresentation) }

    /// The public key as a JWK, members in lexicographic order (RFC 7638 §3.2: the thumbprint's input).
    var jwk: String {
        let point = Array(key.publicKey.rawRepresentation)
        return "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"\(Base64URL.encode(point[0..<32]))\",\"y\":\"\(Base64URL.encode(point[32..<64]))\"}"
    }

    /// RFC 7638 thumbprint (SHA-256), the second half of every key authorization (RFC 8555 §8.1).
    var thumbprint: String { Base64URL.encode(SHA256.hash(data: Array(jwk.utf8))) }

    /// `token.thumbprint`: what an http-01 challenge must answer.
    func keyAuthorization(token: String) -> String { token + "." + thumbprint }

    /// A flattened JWS (RFC 7515 §7.2.2) of `payload` (nil: POST-as-GET's empty payload) for `url`.
    func signed(payload: [UInt8]?, url: String, nonce: String, accountURL: String?) throws(ACMEError) -> [UInt8] {
        let identity = accountURL.map { "\"kid\":\(JSONValueWriter.quoted($0))" } ?? "\"jwk\":\(jwk)"
        let protected = "{\"alg\":\"ES256\",\(identity),\"nonce\":\(JSONValueWriter.quoted(nonce)),\"url\":\(JSONValueWriter.quoted(url))}"
        let encodedProtected = Base64URL.encode(Array(protected.utf8))
        let encodedPayload = payload.map { Base64URL.encode($0) } ?? ""
        let signature: P256.Signing.ECDSASignature
        do { signature = try key.signature(for: Array((encodedProtected + "." + encodedPayload).utf8)) } catch {
            throw .protocolError("cannot sign an ACME request: \(error)")
        }
        let body = "{\"protected\":\"\(encodedProtected)\",\"payload\":\"\(encodedPayload)\",\"signature\":\"\(Base64URL.encode(signature.rawRepresentation))\"}"
        return Array(body.utf8)
    }
}
