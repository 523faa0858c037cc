#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HTTP1

/// Textual IP addresses to bytes through `inet_pton`, so Gatehouse accepts exactly what the C
/// library accepts (no octal or shortened IPv4 forms, which have fooled allow-lists before).
enum IPAddress {
    /// 4 bytes for IPv4, 16 for IPv6, nil for anything else (including zone ids and brackets).
    static func parse(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        if text.contains(":") {
            var addr = in6_addr()
            let ok = withUnsafeMutableBytes(of: &addr) { raw in
                inet_pton(AF_INET6, text, raw.baseAddress)
            }
            guard ok == 1 else { return nil }
            return withUnsafeBytes(of: &addr) { Array($0) }
        }
        var addr = in_addr()
        let ok = withUnsafeMutableBytes(of: &addr) { raw in
            inet_pton(AF_INET, text, raw.baseAddress)
        }
        guard ok == 1 else { return nil }
        return withUnsafeBytes(of: &addr) { Array($0) }
    }

    /// The IPv4 bytes of an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), as a dual-stack socket
    /// reports IPv4 peers.
    static func unmapIPv4(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF else { return nil }
        return Array(bytes[12..<16])
    }

    /// `::ffff:a.b.c.d` (an IPv4 peer seen through a dual-stack socket) as `a.b.c.d`; any other
    /// text unchanged. Upstreams and logs expect the IPv4 form.
    static func unmappedText(_ text: String) -> String {
        // On the bytes: `contains(":")` went through Foundation's string search (and bridged the
        // text to an NSString) on every proxied request.
        guard text.containsASCII(UInt8(ascii: ":")), let bytes = parse(text), let v4 = unmapIPv4(bytes) else { return text }
        return v4.map(String.init).joined(separator: ".")
    }
}
