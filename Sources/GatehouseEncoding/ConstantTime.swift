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
        // Through buffer pointers when both are contiguous (native strings): the same loop over
        // every byte, without the generic index work of two `UTF8View`s (a tenth of a callback's
        // string work went there).
        let contiguous = lhs.utf8.withContiguousStorageIfAvailable { a in
            rhs.utf8.withContiguousStorageIfAvailable { b in equals(a, b) }
        }
        if let contiguous, let result = contiguous { return result }
        return equals(lhs.utf8, rhs.utf8)
    }
}
