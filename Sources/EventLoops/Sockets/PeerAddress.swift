/// The peer of a connection, as the socket reports it.
public struct PeerAddress: Sendable, Equatable, CustomStringConvertible {
    /// Textual IP address without brackets or port: `127.0.0.1`, `::1`.
    public var ip: String
    public var port: Int
    public init(ip: String, port: Int) { self.ip = ip; self.port = port }
    public var description: String { ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)" }
}
