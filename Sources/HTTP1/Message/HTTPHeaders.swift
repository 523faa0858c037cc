/// Header fields in arrival order. Duplicates are kept (RFC 9110 §5.3): a dictionary would lose
/// them and hide smuggling attempts such as two `Content-Length` fields.
///
/// The fields are kept as the bytes they are written with, `name: value\r\n` one after the other,
/// with where each lies (`FieldSpan`). A proxied request's fields go from the parser through the
/// header policy to the upstream's head (and the answer's back) as bytes: looked up, filtered and
/// copied without a String made, retained or released for any of them. A String is made only when
/// a caller asks for a name or value as one. Values keep their bytes: a value that is not UTF-8
/// (obs-text, RFC 9110 §5.5) is read as ISO-8859-1 when asked for as a String, and forwarded as the
/// bytes it arrived with.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// Every field's line, `name: value\r\n`, in order.
    /// (A ContiguousArray: `Array<UInt8>.append(contentsOf:)` is bound to a prespecialized copy in
    /// Foundation, a call of about 90 instructions; this one is specialized here, a copy.)
    @usableFromInline var lines: ContiguousArray<UInt8> = []
    @usableFromInline var spans: [FieldSpan] = []
    /// Bit `i` set: field `i` is known to be writable as it is (the parser checked the bytes it
    /// came from, or it was added as an ``HTTPField/Checked``), so the head writer copies it without
    /// checking it again. Bits past the 64th field are never set; those fields are checked when
    /// written, as is every field added by name and value.
    @usableFromInline var checkedFields: UInt64 = 0
    /// Bit `n` set: some field's name is `n` bytes long (`lengthBit`), so a look-up for a name of
    /// a length no field has answers without reading the fields.
    @usableFromInline var nameLengths: UInt64 = 0

    /// Where one field lies in `lines`: its name at `start`, its value after the name's `: `, its
    /// line `nameLength + valueLength + 4` bytes long.
    @usableFromInline
    struct FieldSpan: Sendable, Equatable {
        @usableFromInline var start: UInt32
        @usableFromInline var nameLength: UInt32
        @usableFromInline var valueLength: UInt32

        @usableFromInline
        init(start: UInt32, nameLength: UInt32, valueLength: UInt32) {
            self.start = start
            self.nameLength = nameLength
            self.valueLength = valueLength
        }

        @inlinable var valueStart: Int { Int(start) + Int(nameLength) + 2 }
        @inlinable var lineLength: Int { Int(nameLength) + Int(valueLength) + 4 }
    }

    public init() {}

    /// Empty, with room for `capacity` fields of `bytes` bytes in all (`name: value\r\n` each):
    /// building a head then allocates once per list.
    public init(minimumCapacity capacity: Int, bytes: Int? = nil) {
        spans.reserveCapacity(capacity)
        lines.reserveCapacity(bytes ?? capacity * 32)
    }

    public init(_ pairs: [(String, String)]) {
        spans.reserveCapacity(pairs.count)
        lines.reserveCapacity(pairs.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 4 })
        for (name, value) in pairs { add(name, value) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    public var count: Int { spans.count }

    /// The bytes of every field's line together: what writing them all takes at most.
    public var encodedSize: Int { lines.count }

    /// The fields as name and value Strings (made for the call: not for the paths run per request).
    public var fields: [HTTPField] {
        (0..<count).map { HTTPField(name: name(at: $0), value: value(at: $0)) }
    }

    /// The same names and values in the same order (values compared as the Strings they read as);
    /// which of them were checked is not part of the value.
    public static func == (a: HTTPHeaders, b: HTTPHeaders) -> Bool {
        if a.spans == b.spans && a.lines == b.lines { return true }
        return a.fields == b.fields
    }

    /// True when both lists are the same storage (one was copied from the other, unchanged since),
    /// so they hold the same fields: a look at two buffer addresses, whatever the fields. False says
    /// nothing (equal fields may lie in different storage).
    public func isSameStorage(as other: HTTPHeaders) -> Bool {
        guard lines.count == other.lines.count, spans.count == other.spans.count,
              checkedFields == other.checkedFields else { return false }
        let sameLines = lines.withUnsafeBufferPointer { a in other.lines.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
        let sameSpans = spans.withUnsafeBufferPointer { a in other.spans.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
        return sameLines && sameSpans
    }

    /// True when field `index` is known to be writable as it is (see ``HTTPField/Checked``).
    @inline(__always)
    public func isChecked(at index: Int) -> Bool {
        index < 64 && (checkedFields >> UInt64(index)) & 1 == 1
    }

    /// Room for `capacity` fields in all, so that adding several allocates (or copies a shared
    /// list) once.
    public mutating func reserveCapacity(_ capacity: Int) {
        spans.reserveCapacity(capacity)
    }

    /// Where the fields' bytes live: two lists with the same address share them (a parser hands
    /// out the previous head's list again for an identical head).
    var storageAddress: UnsafeRawPointer? {
        lines.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }

    public func makeIterator() -> IndexingIterator<[HTTPField]> { fields.makeIterator() }

    // MARK: Reading fields as bytes

    /// Calls `body` with the index, name and value bytes of each field in order (valid only during
    /// the call) until it returns false.
    @inlinable
    public func forEachField(_ body: (Int, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> Bool) rethrows {
        try lines.withUnsafeBufferPointer { bytes in
            try spans.withUnsafeBufferPointer { spans in
                guard let base = bytes.baseAddress else { return }
                for index in spans.indices {
                    let span = spans[index]
                    let name = UnsafeBufferPointer(start: base + Int(span.start), count: Int(span.nameLength))
                    let value = UnsafeBufferPointer(start: base + span.valueStart, count: Int(span.valueLength))
                    if try !body(index, name, value) { return }
                }
            }
        }
    }

    /// Calls `body` with the name and value bytes of field `index` (valid only during the call).
    @inlinable
    public func withField<R>(at index: Int, _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let span = spans[index]
        return try lines.withUnsafeBufferPointer { bytes in
            let base = bytes.baseAddress!
            return try body(UnsafeBufferPointer(start: base + Int(span.start), count: Int(span.nameLength)),
                            UnsafeBufferPointer(start: base + span.valueStart, count: Int(span.valueLength)))
        }
    }

    /// The name of field `index` as it was spelled.
    public func name(at index: Int) -> String {
        withField(at: index) { name, _ in String(decoding: name, as: UTF8.self) }
    }

    /// The value of field `index`: UTF-8, or each byte as ISO-8859-1 when it is not UTF-8.
    public func value(at index: Int) -> String {
        withField(at: index) { _, value in FieldText.value(value) }
    }

    /// The index of the first field called `name` (ASCII case ignored) at or after `start`.
    @usableFromInline
    func firstIndex(of name: String, from start: Int = 0) -> Int? {
        if let found = name.utf8.withContiguousStorageIfAvailable({ firstIndex(ofBytes: $0, from: start) }) { return found }
        var name = name
        return name.withUTF8 { wanted in firstIndex(ofBytes: wanted, from: start) }
    }

    private func firstIndex(ofBytes wanted: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        // Most names asked for are absent (`Connection`, `Expect`, `Transfer-Encoding`, ...): their
        // length usually is too.
        guard nameLengths & Self.lengthBit(wanted.count) != 0, start < spans.count,
              let wantedBase = wanted.baseAddress else { return nil }
        return lines.withUnsafeBufferPointer { bytes in
            spans.withUnsafeBufferPointer { spans in
                let base = bytes.baseAddress!
                var index = start
                while index < spans.count {
                    let span = spans[index]
                    if Int(span.nameLength) == wanted.count,
                       ByteSearch.equalIgnoringASCIICase(base + Int(span.start), wantedBase, count: wanted.count) {
                        return index
                    }
                    index += 1
                }
                return nil
            }
        }
    }

    /// The bit of `nameLengths` for names of `length` bytes (the last bit stands for every length
    /// from 63 on).
    @inlinable
    static func lengthBit(_ length: Int) -> UInt64 {
        1 << UInt64(Swift.min(length, 63))
    }

    // MARK: Adding and removing

    public mutating func add(_ name: String, _ value: String) {
        // On the strings' own bytes (every native String has them); a copy only for the others.
        let added: Bool = name.utf8.withContiguousStorageIfAvailable { name in
            value.utf8.withContiguousStorageIfAvailable { value in
                append(name: name, value: value, checked: false)
                return true
            } ?? false
        } ?? false
        if added { return }
        var name = name, value = value
        name.withUTF8 { name in value.withUTF8 { value in append(name: name, value: value, checked: false) } }
    }

    /// Appends `traceparent` with `trace`'s value (a fresh trace's written as bytes, checked: hex
    /// digits and dashes; a received one is checked when written, as any field from a client).
    public mutating func add(_ trace: TraceParent) {
        let name: StaticString = "traceparent"
        let checked = !trace.isReceived
        trace.withHeaderValue { value in
            append(name: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: value, checked: checked)
        }
    }

    /// Appends checked fields that go together, with one copy of their lines.
    public mutating func add(_ group: HTTPField.CheckedGroup) {
        precondition(lines.count + group.lines.count <= Int(UInt32.max), "header fields larger than 4 GiB")
        var start = lines.count
        for (nameLength, lineLength) in group.spans {
            if spans.count < 64 { checkedFields |= 1 << UInt64(spans.count) }
            spans.append(FieldSpan(start: UInt32(start), nameLength: UInt32(nameLength), valueLength: UInt32(lineLength - nameLength - 4)))
            nameLengths |= Self.lengthBit(nameLength)
            start += lineLength
        }
        group.lines.withUnsafeBufferPointer { lines.append(contentsOf: $0) }
    }

    /// Appends a field checked once for many heads (the security headers).
    public mutating func add(_ checked: HTTPField.Checked) {
        checked.line.withUnsafeBufferPointer { line in
            appendLine(line, nameLength: checked.nameLength, checked: true)
        }
    }

    /// Appends `other`'s field at `index`, still marked checked when it was there (a proxy passing
    /// the fields of a parsed head on does not check them twice): one copy of its line's bytes.
    public mutating func add(fieldAt index: Int, of other: HTTPHeaders) {
        let span = other.spans[index]
        other.lines.withUnsafeBufferPointer { bytes in
            appendLine(UnsafeBufferPointer(rebasing: bytes[Int(span.start)..<Int(span.start) + span.lineLength]),
                       nameLength: Int(span.nameLength), checked: other.isChecked(at: index))
        }
    }

    /// Appends `other`'s fields that `keep` (given each one's index, name and value) returns true
    /// for, in order, still marked checked where they were: one copy per run of consecutive kept
    /// fields (the proxy keeps most of a head's fields).
    @inlinable
    public mutating func append(fieldsOf other: HTTPHeaders,
                                where keep: (Int, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool) {
        precondition(lines.count + other.lines.count <= Int(UInt32.max), "header fields larger than 4 GiB")
        let marks = other.checkedFields
        other.lines.withUnsafeBufferPointer { bytes in
            other.spans.withUnsafeBufferPointer { others in
                guard let base = bytes.baseAddress else { return }
                var runStart = 0, runEnd = 0
                for index in others.indices {
                    let span = others[index]
                    let start = Int(span.start)
                    guard keep(index, UnsafeBufferPointer(start: base + start, count: Int(span.nameLength)),
                               UnsafeBufferPointer(start: base + span.valueStart, count: Int(span.valueLength))) else { continue }
                    if start != runEnd {
                        if runEnd > runStart { lines.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<runEnd])) }
                        runStart = start
                        runEnd = start
                    }
                    // Where the line will be once the runs before it are copied.
                    let at = lines.count + (runEnd - runStart)
                    if index < 64, (marks >> UInt64(index)) & 1 == 1, spans.count < 64 { checkedFields |= 1 << UInt64(spans.count) }
                    spans.append(FieldSpan(start: UInt32(at), nameLength: span.nameLength, valueLength: span.valueLength))
                    nameLengths |= Self.lengthBit(Int(span.nameLength))
                    runEnd = start + span.lineLength
                }
                if runEnd > runStart { lines.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<runEnd])) }
            }
        }
    }

    /// Appends a field from its name and value bytes; `checked` when they passed the parser's
    /// field-line rules.
    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, checked: Bool) {
        let length = name.count + value.count + 4
        precondition(lines.count + length <= Int(UInt32.max), "header fields larger than 4 GiB")
        if checked, spans.count < 64 { checkedFields |= 1 << UInt64(spans.count) }
        spans.append(FieldSpan(start: UInt32(lines.count), nameLength: UInt32(name.count), valueLength: UInt32(value.count)))
        nameLengths |= Self.lengthBit(name.count)
        // Put together, then appended at once: each append checks the array's uniqueness and room.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { line in
            let start = line.baseAddress!
            if let from = name.baseAddress { start.initialize(from: from, count: name.count) }
            start[name.count] = ASCII.colon
            start[name.count + 1] = ASCII.space
            if let from = value.baseAddress { (start + name.count + 2).initialize(from: from, count: value.count) }
            start[length - 2] = ASCII.cr
            start[length - 1] = ASCII.lf
            lines.append(contentsOf: UnsafeBufferPointer(line))
        }
    }

    /// Appends a whole `name: value\r\n` line whose name is `nameLength` bytes long.
    private mutating func appendLine(_ line: UnsafeBufferPointer<UInt8>, nameLength: Int, checked: Bool) {
        precondition(lines.count + line.count <= Int(UInt32.max), "header fields larger than 4 GiB")
        if checked, spans.count < 64 { checkedFields |= 1 << UInt64(spans.count) }
        spans.append(FieldSpan(start: UInt32(lines.count), nameLength: UInt32(nameLength),
                               valueLength: UInt32(line.count - nameLength - 4)))
        nameLengths |= Self.lengthBit(nameLength)
        lines.append(contentsOf: line)
    }

    /// Checks the fields not yet checked (the first 64) now, so that a list written on many answers
    /// (a cached file's fields, the health answer) is copied by the head writer instead of checked
    /// each time. A field that could not be written stays unmarked (the writer drops it).
    public mutating func checkAll() {
        for index in 0..<Swift.min(count, 64) where !isChecked(at: index) {
            if withField(at: index, { name, value in HeadWriter.isToken(name) && HeadWriter.isFieldValue(value) }) {
                checkedFields |= 1 << UInt64(index)
            }
        }
    }

    /// Replaces every field called `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    public mutating func remove(_ name: String) {
        guard contains(name) else { return }
        var name = name
        name.withUTF8 { wanted in removeFields { fieldName, _ in ByteSearch.equalIgnoringASCIICase(fieldName, wanted) } }
    }

    public mutating func removeAll(where predicate: (HTTPField) -> Bool) {
        removeFields { name, value in
            predicate(HTTPField(name: String(decoding: name, as: UTF8.self), value: FieldText.value(value)))
        }
    }

    /// Keeps the fields `drop` returns false for, in order, with their marks.
    private mutating func removeFields(_ drop: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool) {
        var kept = HTTPHeaders(minimumCapacity: count, bytes: encodedSize)
        forEachField { index, name, value in
            if !drop(name, value) { kept.add(fieldAt: index, of: self) }
            return true
        }
        self = kept
    }
}
