import GatehouseEncoding

/// The name/value pairs of a URL query or an `application/x-www-form-urlencoded` body, in order.
///
/// Duplicates are kept so that a request repeating a parameter can be refused: RFC 6749 §3.1 says
/// "Request and response parameters MUST NOT be included more than once."
struct FormParameters: Sendable, Equatable {
    struct Pair: Sendable, Equatable {
        var name: String
        var value: String
    }

    private(set) var pairs: [Pair] = []

    init() {}

    /// Parses `a=1&b=two+words&c=%2F`: `+` is a space, `%XX` a byte, the bytes UTF-8.
    /// - Throws: `FormDecodingError` on a broken percent escape or invalid UTF-8.
    init(encoded: some StringProtocol) throws(FormDecodingError) {
        try self.init(bytes: Array(encoded.utf8))
    }

    init(bytes: [UInt8]) throws(FormDecodingError) {
        for field in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = field.firstIndex(of: UInt8(ascii: "="))
            let rawName = equals.map { field[field.startIndex..<$0] } ?? field[...]
            let rawValue = equals.map { field[field.index(after: $0)...] } ?? []
            pairs.append(Pair(name: try Self.decode(rawName), value: try Self.decode(rawValue)))
        }
    }

    /// The value of `name`, nil when absent. An empty value counts as absent (RFC 6749 §3.1:
    /// "Parameters sent without a value MUST be treated as if they were omitted").
    subscript(name: String) -> String? {
        for pair in pairs where pair.name == name { return pair.value.isEmpty ? nil : pair.value }
        return nil
    }

    /// The first name that occurs more than once, if any.
    var firstRepeatedName: String? {
        var seen: Set<String> = []
        for pair in pairs where !seen.insert(pair.name).inserted { return pair.name }
        return nil
    }

    static func decode(_ raw: some Collection<UInt8>) throws(FormDecodingError) -> String {
        guard let bytes = PercentEncoding.decode(bytes: raw, plusAsSpace: true) else { throw .brokenPercentEscape }
        guard let string = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
        return string
    }
}

enum FormDecodingError: Error, Equatable, Sendable {
    case brokenPercentEscape
    case invalidUTF8
}

/// Builds query strings and form bodies: every byte but the RFC 3986 unreserved characters is
/// percent-encoded, so values can never break out of their parameter.
enum FormEncoding {
    static func encode(_ value: String) -> String {
        PercentEncoding.encodeQueryComponent(value)
    }

    /// `a=1&b=2`, leaving out pairs whose value is nil.
    static func encode(_ pairs: [(String, String?)]) -> String {
        pairs.compactMap { name, value in value.map { "\(encode(name))=\(encode($0))" } }
            .joined(separator: "&")
    }

    /// `base?pairs`, or `base&pairs` when `base` already has a query (RFC 6749 §3.1.2: the
    /// redirection endpoint's query component "MUST be retained when adding additional query
    /// parameters").
    static func appendingQuery(_ pairs: [(String, String?)], to base: String) -> String {
        let query = encode(pairs)
        guard !query.isEmpty else { return base }
        return base + (base.contains("?") ? "&" : "?") + query
    }
}
