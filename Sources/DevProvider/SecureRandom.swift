import Crypto
import GatehouseEncoding

/// Secrets of the provider: codes, tokens, session ids. All come from the system CSPRNG
/// (`SystemRandomNumberGenerator` reads `getrandom(2)` on Linux).
enum SecureRandom {
    /// 32 random bytes (256 bits), base64url without padding: 43 characters.
    static func token() -> String {
        RandomToken.make(bytes: 32)
    }
}

/// The key under which a token is remembered: its SHA-256. The provider's tables never hold a
/// token itself, so a dump of the state (or a debugger) shows nothing usable.
struct TokenDigest: Hashable, Sendable {
    private let bytes: [UInt8]

    init(_ token: String) {
        bytes = Array(SHA256.hash(data: Array(token.utf8)))
    }
}

/// Compares two secrets without an early exit, so the time taken does not reveal how many leading
/// bytes matched. Both sides are hashed first, which also hides their lengths.
func constantTimeEquals(_ a: String, _ b: String) -> Bool {
    ConstantTime.equals(Array(SHA256.hash(data: Array(a.utf8))), Array(SHA256.hash(data: Array(b.utf8))))
}
