import Crypto

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
        hexString(SHA256.hash(data: bytes))
    }

    static func hexString(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Compares two secrets in time that depends only on their lengths, not on where they differ,
/// so a network attacker cannot find a secret byte by byte from response timings.
///
/// For example: `guard constantTimeEquals(presentedBinding, pending.bindingHash) else { … }`
public func constantTimeEquals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
    guard lhs.count == rhs.count else { return false }
    var difference: UInt8 = 0
    for (a, b) in zip(lhs, rhs) {
        difference |= a ^ b
    }
    return difference == 0
}

/// `constantTimeEquals` over the UTF-8 bytes of two strings.
public func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
    constantTimeEquals(Array(lhs.utf8), Array(rhs.utf8))
}
