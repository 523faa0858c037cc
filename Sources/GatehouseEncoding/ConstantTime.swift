/// Comparison of secrets in time that depends only on their lengths, never on where they differ,
/// so a network attacker cannot find a secret byte by byte from response timings.
///
/// For example: `guard ConstantTime.equals(presentedBinding, pending.bindingHash) else { … }`
public enum ConstantTime {
    @inlinable
    public static func equals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(lhs, rhs) { difference |= a ^ b }
        return difference == 0
    }

    /// ``equals(_:_:)`` over the UTF-8 bytes of two strings.
    @inlinable
    public static func equals(_ lhs: some StringProtocol, _ rhs: some StringProtocol) -> Bool {
        equals(lhs.utf8, rhs.utf8)
    }
}
