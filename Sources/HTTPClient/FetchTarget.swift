import EventLoops

/// Where a `FetchClient` call goes, from an absolute `http(s)://` URL (RFC 3986 §3): scheme, host,
/// port and origin-form target. Pure: tested without sockets.
///
/// Refused: another scheme, an empty host, user information (`user:pass@`: credentials never ride
/// in a URL the gateway logs), a port outside 1–65535, an invalid IPv6 literal, a host with
/// anything but letters, digits, `-`, `.` and `_` (no IDN), and spaces or control characters
/// anywhere. A fragment is dropped (it never travels, RFC 9110 §7.1).
struct FetchTarget: Equatable, Sendable {
    var tls: Bool
    /// Lowercased; an IPv6 literal without its brackets.
    var host: String
    var port: Int
    /// Path and query, never empty (`/` at least).
    var path: String

    init?(_ url: String) {
        let bytes = Array(url.utf8)
        guard !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }),
              let separator = bytes.firstIndex(of: UInt8(ascii: ":")),
              bytes[separator...].starts(with: "://".utf8) else { return nil }
        switch String(decoding: bytes[..<separator], as: UTF8.self).lowercased() {
        case "https": tls = true
        case "http": tls = false
        default: return nil
        }
        let authorityStart = separator + 3
        let authorityEnd = bytes[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        let authority = bytes[authorityStart..<authorityEnd]
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")), authority.allSatisfy({ $0 < 0x80 }) else { return nil }

        let portText: ArraySlice<UInt8>?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            let literal = String(decoding: authority[(authority.startIndex + 1)..<close], as: UTF8.self)
            guard literal.contains(":"), SocketAddress(ip: literal, port: 0) != nil else { return nil }
            host = literal.lowercased()
            let rest = authority[(close + 1)...]
            if rest.isEmpty { portText = nil }
            else if rest.first == UInt8(ascii: ":") { portText = rest.dropFirst() }
            else { return nil }
        } else {
            let colon = authority.firstIndex(of: UInt8(ascii: ":"))
            let name = authority[..<(colon ?? authority.endIndex)]
            guard !name.isEmpty, name.allSatisfy(Self.isHostByte) else { return nil }
            host = String(decoding: name, as: UTF8.self).lowercased()
            portText = colon.map { authority[($0 + 1)...] }
        }
        let defaultPort = tls ? 443 : 80
        if let portText, !portText.isEmpty {
            guard portText.count <= 5, portText.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  let value = Int(String(decoding: portText, as: UTF8.self)), (1...65535).contains(value) else { return nil }
            port = value
        } else {
            port = defaultPort
        }

        let pathEnd = bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        let rest = String(decoding: bytes[authorityEnd..<pathEnd], as: UTF8.self)
        path = rest.hasPrefix("/") ? rest : "/" + rest
    }

    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"): true
        default: false
        }
    }
}
