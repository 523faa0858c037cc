import Crypto
import GatehouseEncoding

/// Proof Key for Code Exchange (RFC 7636), S256 only: `plain` gives no protection when the
/// authorization request can be observed, and RFC 9700 §2.1.1 recommends S256.
enum PKCE {
    /// RFC 7636 §4.2: `code-challenge = 43*128unreserved`.
    static func isValidChallenge(_ challenge: String) -> Bool {
        isUnreservedString(challenge, length: 43...128)
    }

    /// RFC 7636 §4.1: `code-verifier = 43*128unreserved`.
    static func isValidVerifier(_ verifier: String) -> Bool {
        isUnreservedString(verifier, length: 43...128)
    }

    /// RFC 7636 §4.6: `BASE64URL-ENCODE(SHA256(ASCII(code_verifier))) == code_challenge`,
    /// compared in constant time.
    static func verifierMatches(_ verifier: String, challenge: String) -> Bool {
        guard isValidVerifier(verifier) else { return false }
        let computed = Base64URL.encode(SHA256.hash(data: Array(verifier.utf8)))
        return constantTimeEquals(computed, challenge)
    }

    private static func isUnreservedString(_ value: String, length: ClosedRange<Int>) -> Bool {
        guard length.contains(value.utf8.count) else { return false }
        return value.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"): true
            default: false
            }
        }
    }
}
