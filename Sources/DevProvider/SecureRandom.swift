import Foundation
import Crypto

/// Secrets of the provider: codes, tokens, session ids. All come from the system CSPRNG
/// (`SystemRandomNumberGenerator` reads `getrandom(2)` on Linux).
enum SecureRandom {
    /// 32 random bytes (256 bits), base64url without padding: 43 characters.
    static func token() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Base64URL.encode(bytes)
    }
}

enum Base64URL {
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let data = Data(bytes)
        return data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
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
    let x = Array(SHA256.hash(data: Array(a.utf8)))
    let y = Array(SHA256.hash(data: Array(b.utf8)))
    var difference: UInt8 = 0
    for (p, q) in zip(x, y) { difference |= p ^ q }
    return difference == 0
}
