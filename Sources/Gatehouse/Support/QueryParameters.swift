import GatehouseCore
import GatehouseEncoding

/// `application/x-www-form-urlencoded` pairs from a query string or form body.
/// Malformed escapes make a pair's value nil rather than guessing at it.
public struct QueryParameters: Sendable {
    public private(set) var pairs: [(name: String, value: String?)] = []

    public init(_ raw: Substring?) {
        guard let raw, !raw.isEmpty else { return }
        for part in raw.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = PercentEncoding.decodeString(String(pieces[0]), plusAsSpace: true) else { continue }
            let value = pieces.count > 1
                ? PercentEncoding.decodeString(String(pieces[1]), plusAsSpace: true)
                : ""
            pairs.append((name, value))
        }
    }

    public init(form bytes: [UInt8]) {
        self.init(Substring(String(decoding: bytes, as: UTF8.self)))
    }

    /// The value of `name` when it appears exactly once with a well-formed value. Repeated protocol
    /// parameters are ambiguous (RFC 6749 §3.1: "MUST NOT be included more than once").
    public func single(_ name: String) -> String? {
        let matches = pairs.filter { $0.name == name }
        guard matches.count == 1 else { return nil }
        return matches[0].value
    }

    public func contains(_ name: String) -> Bool { pairs.contains { $0.name == name } }

    public func count(_ name: String) -> Int { pairs.filter { $0.name == name }.count }
}
