import Crypto
import FoundationEssentials
import GatehouseEncoding

/// The development provider's reading of a DPoP proof (RFC 9449 §4.3), so that `gatehouse demo` and
/// the benchmark can run with `GATEHOUSE_DPOP=on`: the proof's ES256 signature by the key in its own
/// header, `typ`, `htm`, `htu` and a recent `iat`. A valid proof makes the tokens `DPoP`-typed; the
/// key's thumbprint is what they are bound to.
enum DPoPProof {
    /// The thumbprint of the proof's key when `proof` is valid for `method` on `url` at `now`.
    private struct Header: Decodable {
        let typ: String?
        let alg: String?
        let jwk: Key?
        struct Key: Decodable {
            let kty: String?
            let crv: String?
            let x: String?
            let y: String?
            let d: String?
        }
    }

    private struct Claims: Decodable {
        let htm: String?
        let htu: String?
        let iat: Double?
        let jti: String?
    }

    static func verify(_ proof: String, method: String, url: String, now: Int) throws(OAuthError) -> String {
        let parts = proof.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signatureBytes = Base64URL.decode(parts[2]),
              let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)),
              let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimBytes)) else {
            throw OAuthError(.invalidRequest, "the DPoP proof is not a JWT")
        }
        guard header.typ == "dpop+jwt", header.alg == "ES256", let jwk = header.jwk, jwk.d == nil, jwk.kty == "EC",
              jwk.crv == "P-256", let x = jwk.x.flatMap({ Base64URL.decode($0) }), let y = jwk.y.flatMap({ Base64URL.decode($0) }),
              x.count == 32, y.count == 32,
              let key = try? P256.Signing.PublicKey(rawRepresentation: x + y),
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
              key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)) else {
            throw OAuthError(.invalidRequest, "the DPoP proof's header or signature is invalid")
        }
        guard claims.htm == method, claims.htu == url, let iat = claims.iat, abs(iat - Double(now)) < 300,
              claims.jti != nil else {
            throw OAuthError(.invalidRequest, "the DPoP proof is not for this request")
        }
        let canonical = "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"\(Base64URL.encode(x))\",\"y\":\"\(Base64URL.encode(y))\"}"
        return Base64URL.encode(SHA256.hash(data: Array(canonical.utf8)))
    }
}
