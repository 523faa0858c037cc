import FoundationEssentials
import JWTKit
import GatehouseEncoding

/// The client's private key for `private_key_jwt` (OIDC Core §9): an RSA (RS256) or P-256 (ES256)
/// key in PEM (PKCS#8 or the traditional encodings). The provider knows the public half from the
/// client's registration. Its description never shows the key.
public struct ClientSigningKey: Sendable, CustomStringConvertible {
    public enum Algorithm: String, Sendable { case rs256 = "RS256", es256 = "ES256" }

    public let algorithm: Algorithm
    /// The `kid` put in the assertion's header, when the registration has several keys.
    public let keyID: String?
    private let signers: JWTKeyCollection

    /// - Throws: ``TokenEndpointError/invalidConfiguration(_:)`` when the PEM holds no RSA or P-256 private key.
    public init(pem: String, keyID: String?) async throws(TokenEndpointError) {
        let signers = JWTKeyCollection()
        let identifier = keyID.map { JWKIdentifier(string: $0) }
        if let rsa = try? Insecure.RSA.PrivateKey(pem: pem) {
            await signers.add(rsa: rsa, digestAlgorithm: .sha256, kid: identifier)
            algorithm = .rs256
        } else if let ec = try? ES256PrivateKey(pem: pem) {
            await signers.add(ecdsa: ec, kid: identifier)
            algorithm = .es256
        } else {
            throw .invalidConfiguration("GATEHOUSE_CLIENT_PRIVATE_KEY holds no RSA or P-256 private key in PEM")
        }
        self.keyID = keyID
        self.signers = signers
    }

    /// Why `pem` cannot serve as the client key, or nil; synchronous, for start-up checks.
    public static func problem(pem: String) -> String? {
        if (try? Insecure.RSA.PrivateKey(pem: pem)) != nil || (try? ES256PrivateKey(pem: pem)) != nil { return nil }
        return "GATEHOUSE_CLIENT_PRIVATE_KEY holds no RSA or P-256 private key in PEM"
    }

    /// The algorithm `pem`'s key signs with, or nil when it is no usable key.
    public static func algorithm(pem: String) -> Algorithm? {
        if (try? ES256PrivateKey(pem: pem)) != nil { return .es256 }
        if (try? Insecure.RSA.PrivateKey(pem: pem)) != nil { return .rs256 }
        return nil
    }

    public var description: String { "ClientSigningKey(\(algorithm.rawValue), kid: \(keyID ?? "none"))" }

    /// A `private_key_jwt` assertion: `iss` = `sub` = the client id, `aud` = the token endpoint, a
    /// random `jti`, `iat`, `exp` one minute later (RFC 7523 §3).
    func assertion(clientID: String, audience: String, now: Date) async throws(TokenEndpointError) -> String {
        let issuedAt = Double(Int(now.timeIntervalSince1970))
        let claims = RawClaims(claims: [
            "iss": .string(clientID), "sub": .string(clientID), "aud": .string(audience),
            "jti": .string(RandomToken.make()), "iat": .number(issuedAt), "exp": .number(issuedAt + ClientAssertion.lifetime),
        ])
        do {
            return try await signers.sign(claims, kid: keyID.map { JWKIdentifier(string: $0) })
        } catch {
            throw .invalidConfiguration("cannot sign the client assertion: \(error)")
        }
    }
}
