/// Header fields in arrival order. Duplicates are kept (RFC 9110 §5.3): a dictionary would lose
/// them and hide smuggling attempts such as two `Content-Length` fields.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [HTTPField]
    /// Bit `i` set: `fields[i]` is known to be writable as it is (the parser checked the bytes it
    /// came from, or it was added as an ``HTTPField/Checked``), so the head writer copies it without
    /// checking it again. Bits past the 64th field are never set; those fields are checked when
    /// written, as is every field added by name and value.
    private var checkedFields: UInt64 = 0

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

    /// The same fields in the same order; which of them were checked is not part of the value.
    public static func == (a: HTTPHeaders, b: HTTPHeaders) -> Bool {
        a.fields == b.fields
    }

    /// True when `fields[index]` is known to be writable as it is (see ``HTTPField/Checked``).
    @inline(__always)
    public func isChecked(at index: Int) -> Bool {
        index < 64 && (checkedFields >> UInt64(index)) & 1 == 1
    }

    /// Room for `capacity` fields in all, so that adding several allocates (or copies a shared
    /// list) once.
    public mutating func reserveCapacity(_ capacity: Int) {
        fields.reserveCapacity(capacity)
    }

    public func makeIterator() -> IndexingIterator<[HTTPField]> { fields.makeIterator() }

    /// The index of the first field called `name` at or after `start`. The fields are read in
    /// place (a `for field in fields` loop copies each field, retaining and releasing both of its
    /// strings, and header look-ups scan the list about ten times per proxied request).
    @inline(__always)
    private func firstIndex(of name: String, from start: Int = 0) -> Int? {
        fields.withUnsafeBufferPointer { buffer in
            var index = start
            while index < buffer.count {
                if buffer[index].name.asciiCaseInsensitiveEquals(name) { return index }
                index += 1
            }
            return nil
        }
    }

    /// The first value of `name`, compared without ASCII case.
    public subscript(name: String) -> String? {
        firstIndex(of: name).map { fields[$0].value }
    }

    /// Every value of `name`, in arrival order.
    public func values(_ name: String) -> [String] {
        var found: [String] = []
        var next = firstIndex(of: name)
        while let index = next {
            found.append(fields[index].value)
            next = firstIndex(of: name, from: index + 1)
        }
        return found
    }

    public func contains(_ name: String) -> Bool {
        firstIndex(of: name) != nil
    }

    /// Calls `body` with the value of every field called `name` (ASCII case ignored), in arrival
    /// order, until it returns false; the other fields are not copied.
    public func forEachValue<Failure: Error>(_ name: String, _ body: (String) throws(Failure) -> Bool) throws(Failure) {
        var next = firstIndex(of: name)
        while let index = next {
            guard try body(fields[index].value) else { return }
            next = firstIndex(of: name, from: index + 1)
        }
    }

    /// Calls `body` with each comma-separated, trimmed, non-empty element of every `name` field,
    /// as it is spelled (compare without case); `body` returns false to stop. Allocates nothing:
    /// this runs on every proxied request (`Connection` of both sides).
    public func forEachToken(_ name: String, _ body: (Substring) -> Bool) {
        var next = firstIndex(of: name)
        while let index = next {
            next = firstIndex(of: name, from: index + 1)
            let value = fields[index].value
            let utf8 = value.utf8
            // Elements end at ASCII commas and are trimmed of ASCII blanks, so their offsets always
            // fall between Unicode scalars.
            let go = utf8.withContiguousStorageIfAvailable { bytes in
                Self.forEachElement(of: bytes) { start, end in
                    let lower = utf8.index(utf8.startIndex, offsetBy: start)
                    return body(value[lower..<utf8.index(lower, offsetBy: end - start)])
                }
            } ?? Self.forEachElement(of: value[...], body)
            if !go { return }
        }
    }

    /// As `forEachToken`, with each element as the bytes it is spelled with (valid only during the
    /// call): no Substring is cut for an element the caller only compares.
    public func forEachTokenBytes(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        var next = firstIndex(of: name)
        while let index = next {
            next = firstIndex(of: name, from: index + 1)
            let value = fields[index].value
            let go = value.utf8.withContiguousStorageIfAvailable { bytes in
                Self.forEachElement(of: bytes) { start, end in body(UnsafeBufferPointer(rebasing: bytes[start..<end])) }
            } ?? Self.forEachElement(of: value[...]) { element in
                var copy = String(element)
                return copy.withUTF8 { body($0) }
            }
            if !go { return }
        }
    }

    /// True when a `name` field lists `token` (ASCII case ignored), e.g. `hasToken("Connection", "close")`.
    public func hasToken(_ name: String, _ token: String) -> Bool {
        var next = firstIndex(of: name)
        while let index = next {
            next = firstIndex(of: name, from: index + 1)
            // On the bytes: `Connection` is asked about on every request and every upstream answer.
            let found = fields[index].value.utf8.withContiguousStorageIfAvailable { bytes in
                token.utf8.withContiguousStorageIfAvailable { wanted in
                    !Self.forEachElement(of: bytes) { start, end in
                        !(end - start == wanted.count
                          && String.asciiFoldedEqual(UnsafeBufferPointer(rebasing: bytes[start..<end]), wanted))
                    }
                }
            } ?? nil
            if let found {
                if found { return true }
                continue
            }
            var listed = false
            _ = Self.forEachElement(of: fields[index].value[...]) { element in
                listed = element.asciiCaseInsensitiveEquals(token)
                return !listed
            }
            if listed { return true }
        }
        return false
    }

    /// Calls `body` with the offsets `[start, end)` of each comma-separated element of `bytes`,
    /// trimmed of spaces and tabs, skipping empty ones, until it returns false; false if it did.
    @inline(__always)
    private static func forEachElement(of bytes: UnsafeBufferPointer<UInt8>, _ body: (Int, Int) -> Bool) -> Bool {
        var start = 0
        let count = bytes.count
        while start < count {
            var end = start
            while end < count, bytes[end] != UInt8(ascii: ",") { end += 1 }
            var first = start, last = end
            while first < last, bytes[first] == 0x20 || bytes[first] == 0x09 { first += 1 }
            while last > first, bytes[last - 1] == 0x20 || bytes[last - 1] == 0x09 { last -= 1 }
            if first < last, !body(first, last) { return false }
            start = end + 1
        }
        return true
    }

    /// The same over a string without contiguous UTF-8 (not met on Linux, where every String is native).
    private static func forEachElement(of value: Substring, _ body: (Substring) -> Bool) -> Bool {
        var rest = value
        while !rest.isEmpty {
            let comma = rest.utf8.firstIndex(of: UInt8(ascii: ",")) ?? rest.endIndex
            let element = rest[..<comma].trimmingASCIIWhitespace()
            if !element.isEmpty, !body(element) { return false }
            rest = comma < rest.endIndex ? rest[rest.utf8.index(after: comma)...] : rest[rest.endIndex...]
        }
        return true
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append(HTTPField(name: name, value: value))
    }

    /// Appends a field checked once for many heads (the security headers).
    public mutating func add(_ checked: HTTPField.Checked) {
        addChecked(checked.field)
    }

    /// Appends `other`'s field at `index`, still marked checked when it was there (a proxy passing
    /// the fields of a parsed head on does not check them twice).
    public mutating func add(fieldAt index: Int, of other: HTTPHeaders) {
        if other.isChecked(at: index) {
            addChecked(other.fields[index])
        } else {
            fields.append(other.fields[index])
        }
    }

    /// Checks the fields not yet checked (the first 64) now, so that a list written on many answers
    /// (a cached file's fields, the health answer) is copied by the head writer instead of checked
    /// each time. A field that could not be written stays unmarked (the writer drops it).
    public mutating func checkAll() {
        for index in 0..<Swift.min(fields.count, 64) where !isChecked(at: index) && HeadWriter.isSafe(fields[index]) {
            checkedFields |= 1 << UInt64(index)
        }
    }

    /// For fields whose bytes passed the parser's field-line rules.
    mutating func addChecked(_ field: HTTPField) {
        if fields.count < 64 { checkedFields |= 1 << UInt64(fields.count) }
        fields.append(field)
    }

    /// Replaces every field called `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    public mutating func remove(_ name: String) {
        // Check first: `removeAll` would copy shared storage even when nothing matches.
        guard contains(name) else { return }
        removeAll { $0.name.asciiCaseInsensitiveEquals(name) }
    }

    public mutating func removeAll(where predicate: (HTTPField) -> Bool) {
        guard checkedFields != 0 else { return fields.removeAll(where: predicate) }
        // The marks move with the fields that stay.
        var kept: [HTTPField] = []
        kept.reserveCapacity(fields.count)
        var marks: UInt64 = 0
        for (index, field) in fields.enumerated() where !predicate(field) {
            if isChecked(at: index) { marks |= 1 << UInt64(kept.count) }
            kept.append(field)
        }
        fields = kept
        checkedFields = marks
    }

    /// The comma-separated tokens of every `name` field, lowercased (e.g. `Connection: close, Upgrade`).
    public func tokens(_ name: String) -> [String] {
        var tokens: [String] = []
        forEachToken(name) { tokens.append($0.lowercased()); return true }
        return tokens
    }
}
