/// An IPv4 or IPv6 network in CIDR notation (`10.0.0.0/8`, `::1/128`); a bare address is a
/// single host (`/32` or `/128`). Used for `GATEHOUSE_TRUSTED_PROXIES`.
///
/// For example: `CIDR("10.0.0.0/8")?.contains(ip: "10.1.2.3") == true`.
public struct CIDR: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// Network address bytes (4 or 16), host bits cleared.
    public let address: [UInt8]
    public let prefixLength: Int

    public var isIPv6: Bool { address.count == 16 }

    /// Parses `a.b.c.d[/n]` or `x:y::z[/n]`; nil when malformed or the prefix is out of range.
    /// Host bits below the prefix are ignored (`10.1.2.3/8` is `10.0.0.0/8`).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, let bytes = IPAddress.parse(String(first)) else { return nil }
        let maxPrefix = bytes.count * 8
        var prefix = maxPrefix
        if parts.count == 2 {
            let p = parts[1]
            guard !p.isEmpty, p.utf8.count <= 3, p.utf8.allSatisfy(URLBytes.isDigit), let n = Int(p), n <= maxPrefix else { return nil }
            prefix = n
        }
        self.address = CIDR.mask(bytes, prefix: prefix)
        self.prefixLength = prefix
    }

    /// True when `ip` (textual, as `PeerAddress.ip`: no port, brackets tolerated) is inside this
    /// network. An IPv4-mapped IPv6 peer (`::ffff:10.0.0.1`) matches IPv4 networks.
    public func contains(ip: String) -> Bool {
        var text = Substring(ip)
        if text.first == "[", text.last == "]" { text = text.dropFirst().dropLast() }
        guard var bytes = IPAddress.parse(String(text)) else { return false }
        if address.count == 4, bytes.count == 16, let v4 = IPAddress.unmapIPv4(bytes) { bytes = v4 }
        guard bytes.count == address.count else { return false }
        return CIDR.mask(bytes, prefix: prefixLength) == address
    }

    public var description: String {
        let host: String
        if isIPv6 {
            var groups: [String] = []
            for i in stride(from: 0, to: 16, by: 2) {
                groups.append(String(UInt16(address[i]) << 8 | UInt16(address[i + 1]), radix: 16))
            }
            host = groups.joined(separator: ":")
        } else {
            host = address.map(String.init).joined(separator: ".")
        }
        return "\(host)/\(prefixLength)"
    }

    static func mask(_ bytes: [UInt8], prefix: Int) -> [UInt8] {
        var out = bytes
        for i in 0..<out.count {
            let bitsHere = max(0, min(8, prefix - i * 8))
            let m: UInt8 = bitsHere == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - bitsHere))
            out[i] &= m
        }
        return out
    }
}
