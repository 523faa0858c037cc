import HTTP1

/// A fixed set of header names, looked up without regard to ASCII case and without allocating.
///
/// The proxy classifies every header field of every request and answer. Names are grouped by
/// length and kept in lowercase bytes, so a lookup compares the few names of the same length,
/// byte by byte, folding only the name looked up.
public struct HeaderNameSet: Sendable {
    /// `byLength[n]`: the names of `n` bytes, lowercase, one after the other.
    private let byLength: [[UInt8]]

    public init(_ names: some Sequence<String>) {
        var table: [[UInt8]] = []
        for name in names {
            let lower = Array(name.lowercased().utf8)
            let length = lower.count
            guard length > 0 else { continue }
            if table.count <= length { table.append(contentsOf: repeatElement([], count: length + 1 - table.count)) }
            let present = stride(from: 0, to: table[length].count, by: length).contains { Array(table[length][$0..<$0 + length]) == lower }
            if !present { table[length] += lower }
        }
        byLength = table
    }

    private init(byLength: [[UInt8]]) {
        self.byLength = byLength
    }

    /// These names and `name`, in arrays of their own.
    public func adding(_ name: String) -> HeaderNameSet {
        var table = byLength.map { $0.map { $0 } }
        let lower = Array(name.lowercased().utf8)
        let length = lower.count
        guard length > 0, !contains(name) else { return HeaderNameSet(byLength: table) }
        if table.count <= length { table.append(contentsOf: repeatElement([], count: length + 1 - table.count)) }
        table[length] += lower
        return HeaderNameSet(byLength: table)
    }

    /// The same names in arrays of their own (`LoopCopies`).
    public var loopCopy: HeaderNameSet { HeaderNameSet(byLength: byLength.map { $0.map { $0 } }) }

    public func contains(_ name: some StringProtocol) -> Bool {
        var text = String(name)
        return text.withUTF8 { contains(bytes: $0) }
    }

    /// `contains` for a name given as its bytes.
    public func contains(bytes name: UnsafeBufferPointer<UInt8>) -> Bool {
        let length = name.count
        guard length < byLength.count, let base = name.baseAddress else { return false }
        return byLength[length].withUnsafeBufferPointer { candidates in
            guard let first = candidates.baseAddress else { return false }
            var offset = 0
            while offset < candidates.count {
                if ByteSearch.equalToLowercase(base, first + offset, count: length) { return true }
                offset += length
            }
            return false
        }
    }

    /// `contains` for a name in any spelling that CGI/WSGI servers and Rack read as the same
    /// variable: `_` as `-`, any case (`X_Forwarded_User` is `x-forwarded-user` to them).
    public func contains(spellingOf name: UnsafeBufferPointer<UInt8>) -> Bool {
        let length = name.count
        guard length < byLength.count, let base = name.baseAddress else { return false }
        return byLength[length].withUnsafeBufferPointer { candidates in
            var offset = 0
            while offset < candidates.count {
                var i = 0
                while i < length {
                    let x = base[i]
                    let folded = x == UInt8(ascii: "_") ? UInt8(ascii: "-") : (x &- 65 < 26 ? x | 0x20 : x)
                    if folded != candidates[offset + i] { break }
                    i += 1
                }
                if i == length { return true }
                offset += length
            }
            return false
        }
    }

    /// The names, each as it is kept (lowercase).
    private var names: [String] {
        byLength.enumerated().flatMap { length, bytes in
            length == 0 ? [] : stride(from: 0, to: bytes.count, by: length).map { String(decoding: bytes[$0..<$0 + length], as: UTF8.self) }
        }
    }

    public func union(_ names: some Sequence<String>) -> HeaderNameSet {
        HeaderNameSet(self.names + Array(names))
    }
}
