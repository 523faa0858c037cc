import Crypto
import GatehouseEncoding

/// The PKCE `code_verifier` (RFC 7636 §4.1): a high-entropy secret kept server-side until the
/// code exchange. Its description is redacted so it cannot reach a log by accident.
public struct CodeVerifier: Sendable, Equatable, CustomStringConvertible {
    public let value: String

    /// Accepts a stored verifier: 43–128 characters from `[A-Za-z0-9-._~]` (RFC 7636 §4.1).
    public init?(_ value: String) {
        guard (43...128).contains(value.utf8.count),
              value.utf8.allSatisfy(PercentEncoding.isUnreserved) else { return nil }
        self.value = value
    }

    /// 32 random bytes, base64url without padding: 43 characters (the RFC 7636 §4.1 recommendation).
    public static func make(random: RandomBytes = .system) -> CodeVerifier {
        CodeVerifier(unchecked: Base64URL.encode(random(32)))
    }

    private init(unchecked value: String) { self.value = value }

    public var description: String { "CodeVerifier(redacted)" }
}

/// The PKCE method. Only `S256`: `plain` offers no protection if the request leaks (RFC 9700 §2.1.1).
public enum PKCEMethod: String, Sendable {
    case s256 = "S256"
}

/// The `code_challenge` sent in the authorization request.
public struct CodeChallenge: Sendable, Equatable {
    public let value: String
    public let method: PKCEMethod

    /// `BASE64URL(SHA256(ASCII(code_verifier)))` (RFC 7636 §4.2).
    ///
    /// For example: the App. B verifier `dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk` gives
    /// `E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM`.
    public static func s256(for verifier: CodeVerifier) -> CodeChallenge {
        CodeChallenge(value: Base64URL.encode(Array(SHA256.hash(data: Array(verifier.value.utf8)))), method: .s256)
    }
}
