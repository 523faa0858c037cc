/// Reading fields as Strings and tokens: the convenient, allocating side of `HTTPHeaders` (the
/// proxy's hot path reads the bytes instead, `HTTPHeaders.swift`).
extension HTTPHeaders {
    /// The first value of `name`, compared without ASCII case.
    public subscript(name: String) -> String? {
        firstIndex(of: name).map { value(at: $0) }
    }

    /// Every value of `name`, in arrival order.
    public func values(_ name: String) -> [String] {
        var found: [String] = []
        var next = firstIndex(of: name)
        while let index = next {
            found.append(value(at: index))
            next = firstIndex(of: name, from: index + 1)
        }
        return found
    }

    public func contains(_ name: String) -> Bool {
        firstIndex(of: name) != nil
    }

    /// Calls `body` with the value of every field called `name` (ASCII case ignored), in arrival
    /// order, until it returns false.
    public func forEachValue<Failure: Error>(_ name: String, _ body: (String) throws(Failure) -> Bool) throws(Failure) {
        var next = firstIndex(of: name)
        while let index = next {
            guard try body(value(at: index)) else { return }
            next = firstIndex(of: name, from: index + 1)
        }
    }

    /// As `forEachValue`, with each value as its bytes (valid only during the call): nothing is
    /// made for a value the caller only reads.
    @inlinable
    public func forEachValueBytes(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        if name.utf8.withContiguousStorageIfAvailable({ forEachValue(namedBytes: $0, body) }) != nil { return }
        var name = name
        name.withUTF8 { forEachValue(namedBytes: $0, body) }
    }

    /// One pass over the fields (a look-up per field found went over them again from there).
    @inlinable
    func forEachValue(namedBytes wanted: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        guard nameLengths & Self.lengthBit(wanted.count) != 0, let wantedBase = wanted.baseAddress else { return }
        lines.withUnsafeBufferPointer { bytes in
            spans.withUnsafeBufferPointer { spans in
                guard let base = bytes.baseAddress else { return }
                for span in spans where Int(span.nameLength) == wanted.count
                    && ByteSearch.equalIgnoringASCIICase(base + Int(span.start), wantedBase, count: wanted.count) {
                    if !body(UnsafeBufferPointer(start: base + span.valueStart, count: Int(span.valueLength))) { return }
                }
            }
        }
    }

    /// Calls `body` with each comma-separated, trimmed, non-empty element of every `name` field,
    /// as it is spelled (compare without case); `body` returns false to stop.
    public func forEachToken(_ name: String, _ body: (Substring) -> Bool) {
        forEachValue(name) { (value: String) -> Bool in
            var copy = value
            return copy.withUTF8 { bytes in
                Self.forEachElement(of: bytes) { start, end in
                    let utf8 = value.utf8
                    // Elements end at ASCII commas and are trimmed of ASCII blanks, so their offsets
                    // always fall between Unicode scalars.
                    let lower = utf8.index(utf8.startIndex, offsetBy: start)
                    return body(value[lower..<utf8.index(lower, offsetBy: end - start)])
                }
            }
        }
    }

    /// As `forEachToken`, with each element as the bytes it is spelled with (valid only during the
    /// call): `Connection` of both sides is read so on every proxied request.
    @inlinable
    public func forEachTokenBytes(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        forEachValueBytes(name) { value in
            Self.forEachElement(of: value) { start, end in body(UnsafeBufferPointer(rebasing: value[start..<end])) }
        }
    }

    /// True when a `name` field lists `token` (ASCII case ignored), e.g. `hasToken("Connection", "close")`.
    public func hasToken(_ name: String, _ token: String) -> Bool {
        func listed(_ wanted: UnsafeBufferPointer<UInt8>) -> Bool {
            var listed = false
            forEachTokenBytes(name) { element in
                listed = ByteSearch.equalIgnoringASCIICase(element, wanted)
                return !listed
            }
            return listed
        }
        if let found = token.utf8.withContiguousStorageIfAvailable(listed) { return found }
        var token = token
        return token.withUTF8(listed)
    }

    /// Calls `body` with the offsets `[start, end)` of each comma-separated element of `bytes`,
    /// trimmed of spaces and tabs, skipping empty ones, until it returns false; false if it did.
    @inlinable
    static func forEachElement(of bytes: UnsafeBufferPointer<UInt8>, _ body: (Int, Int) -> Bool) -> Bool {
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

    /// The comma-separated tokens of every `name` field, lowercased (e.g. `Connection: close, Upgrade`).
    public func tokens(_ name: String) -> [String] {
        var tokens: [String] = []
        forEachToken(name) { tokens.append($0.lowercased()); return true }
        return tokens
    }
}
