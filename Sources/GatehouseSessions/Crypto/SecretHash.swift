import Crypto
import GatehouseEncoding

/// Hashes of secrets for storage and lookup: the database keeps `hex(SHA-256(secret))`, never the
/// secret (session cookie value, `state`, back-channel logout `jti`).
///
/// These secrets carry at least 128 random bits, so an unsalted fast hash is enough: nothing can
/// be guessed from it, and equal secrets must hash equally to be found.
public enum SecretHash {
    /// Lowercase hex SHA-256 of the UTF-8 bytes of `secret` (64 characters).
    ///
    /// For example: `let stateHash = SecretHash.hex(of: state)`
    public static func hex(of secret: String) -> String {
        hex(of: Array(secret.utf8))
    }

    /// Lowercase hex SHA-256 of `bytes` (64 characters).
    public static func hex(of bytes: [UInt8]) -> String {
        Hex.encode(SHA256.hash(data: bytes))
    }

}
