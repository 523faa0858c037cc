/// Comparison of secrets in time that depends only on their lengths, never on where they differ.
public enum ConstantTime {
    public static func equals(_ lhs: some StringProtocol, _ rhs: some StringProtocol) -> Bool {
        equals(Array(lhs.utf8), Array(rhs.utf8))
    }

    public static func equals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
