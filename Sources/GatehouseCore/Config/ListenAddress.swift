/// Where the gateway binds (`GATEHOUSE_LISTEN`): an IP literal and a port.
///
/// Accepted forms: `0.0.0.0:8080`, `127.0.0.1:0` (any free port), `[::]:8080`, `[::1]:8080`,
/// `localhost:8080` (taken as `127.0.0.1`).
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// Numeric host without brackets: `0.0.0.0`, `::`.
    public var host: String
    /// 0 asks the system for a free port.
    public var port: Int

    public var isIPv6: Bool { host.contains(":") }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public enum ParseError: Error, Equatable, Sendable {
        case missingPort
        case invalidHost
        case invalidPort
    }
}

extension ListenAddress {
    public init(parsing text: String) throws(ParseError) {
        let t = text.trimmingConfigurationWhitespace()
        var hostPart: Substring
        let portPart: Substring
        if t.first == "[" {
            guard let close = t.firstIndex(of: "]") else { throw .invalidHost }
            hostPart = t[t.index(after: t.startIndex)..<close]
            let after = t[t.index(after: close)...]
            guard after.first == ":" else { throw .missingPort }
            portPart = after.dropFirst()
            guard IPAddress.parse(String(hostPart))?.count == 16 else { throw .invalidHost }
        } else {
            guard let colon = t.lastIndex(of: ":") else { throw .missingPort }
            hostPart = t[..<colon]
            portPart = t[t.index(after: colon)...]
            if hostPart.lowercased() == "localhost" { hostPart = "127.0.0.1" }
            guard !hostPart.contains(":"), IPAddress.parse(String(hostPart))?.count == 4 else { throw .invalidHost }
        }
        guard !portPart.isEmpty, portPart.utf8.count <= 5, portPart.utf8.allSatisfy(URLBytes.isDigit),
              let port = Int(portPart), port <= 65535
        else { throw .invalidPort }
        self.host = String(hostPart)
        self.port = port
    }
}
