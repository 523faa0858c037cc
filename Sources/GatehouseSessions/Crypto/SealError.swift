/// Why sealed data could not be produced or opened. Never carries the data or a key.
public enum SealError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A key is not 32 bytes. `role` is `current` or `previous`.
    case invalidKeyLength(role: String, count: Int)
    /// Too short, or a format byte this version does not know.
    case malformed
    /// Sealed under a key that is neither the current nor the previous one (rotated out).
    case unknownKey
    /// The key matched but AES-GCM authentication failed: tampered data, or associated data
    /// that differs from sealing (a blob moved to another row).
    case authenticationFailed
    /// AES-GCM refused to seal (not expected with valid keys).
    case sealFailed

    public var description: String {
        switch self {
        case .invalidKeyLength(let role, let count):
            return "the \(role) secret key must be 32 bytes, got \(count)"
        case .malformed: return "sealed data is malformed"
        case .unknownKey: return "sealed data was written under a key that is neither the current nor the previous secret key"
        case .authenticationFailed: return "sealed data failed authentication (tampered, or moved from another record)"
        case .sealFailed: return "sealing failed"
        }
    }
}
