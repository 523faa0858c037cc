#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Guards that keep the development provider on the local machine: it has fixed test users and no
/// real authentication, so it must never be reachable from another host.
public enum DevProviderSecurity {
    /// True for `localhost`, `127.0.0.0/8` and `::1` (with or without brackets, and IPv4-mapped
    /// `::ffff:127.x.y.z`). Everything else, including `0.0.0.0`, is refused.
    ///
    /// For example: `DevProviderSecurity.isLoopback(host: "127.0.0.1")` is true.
    public static func isLoopback(host: String) -> Bool {
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 {
            return isLoopback(ipv4NetworkOrder: v4.s_addr)
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, name, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        guard bytes.count == 16 else { return false }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
        // IPv4-mapped (RFC 4291 §2.5.5.2): ::ffff:a.b.c.d is loopback when a = 127.
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return bytes[12] == 127
        }
        return false
    }

    private static func isLoopback(ipv4NetworkOrder address: in_addr_t) -> Bool {
        let first = withUnsafeBytes(of: address) { $0.first ?? 0 }
        return first == 127
    }
}
