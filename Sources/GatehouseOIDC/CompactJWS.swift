import FoundationEssentials
import GatehouseEncoding

/// The protected header of a compact JWS, read before its signature is checked; only `alg`,
/// `kid`, `typ` and `crit` are consulted, to choose (or refuse) a key.
struct CompactJWSHeader: Sendable {
    /// Tokens above this size are refused unread; the back-channel endpoint is unauthenticated.
    static let maximumTokenSize = 64 * 1024

    let alg: String
    let kid: String?
    let typ: String?
    let crit: [String]?

    init(token: String) throws(JWSVerificationError) {
        guard token.utf8.count <= Self.maximumTokenSize else { throw .malformed("token larger than 64 KiB") }
        // Split on the bytes: the generic split walks Characters (grapheme breaking), about 300
        // instructions a byte of a kilobyte-long token. Base64url is ASCII, so nothing is lost.
        let parts = Array(token.utf8).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .malformed(parts.count == 5 ? "an encrypted JWT (JWE) is not supported" : "not three dot-separated parts")
        }
        guard let headerBytes = Base64URL.decode(parts[0]),
              let header = (try? JSONValue.parse(headerBytes))?.objectValue else {
            throw .malformed("the header is not base64url JSON")
        }
        guard let alg = header["alg"]?.stringValue else { throw .malformed("the header has no alg") }
        self.alg = alg
        switch header["kid"] {
        case nil: kid = nil
        case .string(let value)?: kid = value
        default: throw .malformed("kid is not a string")
        }
        typ = header["typ"]?.stringValue
        if let crit = header["crit"] {
            guard let names = crit.arrayValue?.compactMap(\.stringValue) else { throw .malformed("crit is not an array") }
            self.crit = names
        } else {
            crit = nil
        }
    }
}
