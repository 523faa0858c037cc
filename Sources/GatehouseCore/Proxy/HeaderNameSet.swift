import HTTP1

/// A fixed set of header names, looked up without regard to ASCII case and without allocating.
///
/// The proxy classifies every header field of every request and answer; lowercasing each name to
/// probe a `Set<String>` costs an allocation per long name. Names are grouped by length instead,
/// so a lookup compares bytes against the few names of the same length.
public struct HeaderNameSet: Sendable {
    private let byLength: [[String]]

    public init(_ names: some Sequence<String>) {
        var table: [[String]] = []
        for name in names {
            let length = name.utf8.count
            if table.count <= length { table.append(contentsOf: repeatElement([], count: length + 1 - table.count)) }
            if !table[length].contains(where: { $0.asciiCaseInsensitiveEquals(name) }) { table[length].append(name) }
        }
        byLength = table
    }

    public func contains(_ name: some StringProtocol) -> Bool {
        let length = name.utf8.count
        guard length < byLength.count else { return false }
        for candidate in byLength[length] where candidate.asciiCaseInsensitiveEquals(name) { return true }
        return false
    }

    /// `contains` for a name given as its bytes.
    public func contains(bytes name: UnsafeBufferPointer<UInt8>) -> Bool {
        let length = name.count
        guard length < byLength.count else { return false }
        for candidate in byLength[length] {
            let same = candidate.utf8.withContiguousStorageIfAvailable { ByteSearch.equalIgnoringASCIICase($0, name) }
                ?? candidate.asciiCaseInsensitiveEquals(String(decoding: name, as: UTF8.self))
            if same { return true }
        }
        return false
    }

    public func union(_ names: some Sequence<String>) -> HeaderNameSet {
        HeaderNameSet(byLength.joined() + Array(names))
    }
}
