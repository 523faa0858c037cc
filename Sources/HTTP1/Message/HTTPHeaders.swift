/// Header fields in arrival order. Duplicates are kept (RFC 9110 §5.3): a dictionary would lose
/// them and hide smuggling attempts such as two `Content-Length` fields.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [HTTPField]

    public init() { fields = [] }

    /// Empty, with room for `capacity` fields (building a head then allocates once).
    public init(minimumCapacity capacity: Int) {
        fields = []
        fields.reserveCapacity(capacity)
    }

    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { HTTPField(name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    public var count: Int { fields.count }

    /// Room for `capacity` fields in all, so that adding several allocates (or copies a shared
    /// list) once.
    public mutating func reserveCapacity(_ capacity: Int) {
        fields.reserveCapacity(capacity)
    }

    public func makeIterator() -> IndexingIterator<[HTTPField]> { fields.makeIterator() }

    /// The first value of `name`, compared without ASCII case.
    public subscript(name: String) -> String? {
        for field in fields where field.name.asciiCaseInsensitiveEquals(name) { return field.value }
        return nil
    }

    /// Every value of `name`, in arrival order.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.asciiCaseInsensitiveEquals(name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.asciiCaseInsensitiveEquals(name) }
    }

    /// Calls `body` with each comma-separated, trimmed, non-empty element of every `name` field,
    /// as it is spelled (compare without case); `body` returns false to stop. Allocates nothing:
    /// this runs on every proxied request (`Connection` of both sides).
    public func forEachToken(_ name: String, _ body: (Substring) -> Bool) {
        for field in fields where field.name.asciiCaseInsensitiveEquals(name) {
            var rest = field.value[...]
            while !rest.isEmpty {
                let comma = rest.utf8.firstIndex(of: UInt8(ascii: ",")) ?? rest.endIndex
                let element = rest[..<comma].trimmingASCIIWhitespace()
                if !element.isEmpty, !body(element) { return }
                rest = comma < rest.endIndex ? rest[rest.utf8.index(after: comma)...] : rest[rest.endIndex...]
            }
        }
    }

    /// True when a `name` field lists `token` (ASCII case ignored), e.g. `hasToken("Connection", "close")`.
    public func hasToken(_ name: String, _ token: String) -> Bool {
        var found = false
        forEachToken(name) { element in
            if element.asciiCaseInsensitiveEquals(token) { found = true }
            return !found
        }
        return found
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append(HTTPField(name: name, value: value))
    }

    /// Replaces every field called `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    public mutating func remove(_ name: String) {
        // Check first: `removeAll` would copy shared storage even when nothing matches.
        guard contains(name) else { return }
        fields.removeAll { $0.name.asciiCaseInsensitiveEquals(name) }
    }

    public mutating func removeAll(where predicate: (HTTPField) -> Bool) {
        fields.removeAll(where: predicate)
    }

    /// The comma-separated tokens of every `name` field, lowercased (e.g. `Connection: close, Upgrade`).
    public func tokens(_ name: String) -> [String] {
        var tokens: [String] = []
        forEachToken(name) { tokens.append($0.lowercased()); return true }
        return tokens
    }
}
