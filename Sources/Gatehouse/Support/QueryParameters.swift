import GatehouseCore
import GatehouseEncoding

/// `application/x-www-form-urlencoded` pairs from a query string or form body.
/// Malformed escapes make a pair's value nil rather than guessing at it.
public struct QueryParameters: Sendable {
    public private(set) var pairs: [(name: String, value: String?)] = []

    public init(_ raw: Substring?) {
        guard let raw, !raw.isEmpty else { return }
        // Split on the bytes, as a URL parser does (WHATWG URL §5.1): `&` and `=` are ASCII, and
        // splitting the text by Characters cost a few hundred instructions a byte of a callback.
        for part in raw.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = part.firstIndex(of: UInt8(ascii: "="))
            guard let name = PercentEncoding.decodeString(bytes: part[..<(equals ?? part.endIndex)], plusAsSpace: true)
            else { continue }
            let value = equals.map { PercentEncoding.decodeString(bytes: part[part.index(after: $0)...], plusAsSpace: true) } ?? ""
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
