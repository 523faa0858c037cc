#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The one answer to "is this host the local machine?", used wherever plain `http` or the development
/// provider is allowed only on loopback (the issuer, provider URLs from discovery, the dev provider).
///
/// Loopback is `localhost` (any ASCII case), an IPv4 address in `127.0.0.0/8`, or `::1` (in any
/// spelling `inet_pton` accepts, with or without brackets). Addresses are parsed by `inet_pton`, so
/// the shortened and octal IPv4 forms (`127.1`, `0177.0.0.1`) that have fooled allow-lists before
/// are refused, as are names that merely start with a loopback address (`127.0.0.1.nip.io`).
///
/// IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is refused: it reaches loopback only through a dual-stack
/// socket (not with `IPV6_V6ONLY` or IPv6 disabled), no configuration needs it, and mapped forms are
/// a known way around host allow-lists. Everything accepted here is loopback on every stack.
///
/// For example: `LoopbackHost.contains("127.0.0.1")` is true, `LoopbackHost.contains("0.0.0.0")` false.
public enum LoopbackHost {
    public static func contains(_ host: some StringProtocol) -> Bool {
        var name = Substring(host)
        // Brackets belong to IPv6 literals only (RFC 3986 §3.2.2): `[127.0.0.1]` is no host.
        let bracketed = name.hasPrefix("[") && name.hasSuffix("]")
        if bracketed { name = name.dropFirst().dropLast() }
        guard !name.isEmpty, name.utf8.count <= 64 else { return false }
        let text = String(name)
        if !bracketed && text.lowercased() == "localhost" { return true }
        if text.contains(":") {
            var v6 = in6_addr()
            guard inet_pton(AF_INET6, text, &v6) == 1 else { return false }
            return withUnsafeBytes(of: &v6) { bytes in
                bytes.count == 16 && bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
            }
        }
        guard !bracketed else { return false }
        var v4 = in_addr()
        guard inet_pton(AF_INET, text, &v4) == 1 else { return false }
        return withUnsafeBytes(of: &v4) { $0.first == 127 }
    }
}
