extension StringProtocol {
    /// ASCII-only case-insensitive comparison: header names are ASCII tokens, and locale-aware
    /// folding would both cost time and accept look-alike characters.
    ///
    /// Inlinable so callers in other modules get a version specialized for their string types:
    /// the unspecialized generic looks up type metadata at run time on every call.
    @inlinable
    public func asciiCaseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        // Header lookups run many times per request: compare contiguous bytes when possible.
        if let verdict = a.withContiguousStorageIfAvailable({ x in
            b.withContiguousStorageIfAvailable { y in Self.asciiFoldedEqual(x, y) }
        }), let verdict {
            return verdict
        }
        for (x, y) in zip(a, b) where x != y {
            let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
            let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
            if lx != ly { return false }
        }
        return true
    }

    @usableFromInline
    static func asciiFoldedEqual(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        for i in 0..<x.count {
            let p = x[i], q = y[i]
            if p == q { continue }
            let lp = (p >= 65 && p <= 90) ? p | 0x20 : p
            let lq = (q >= 65 && q <= 90) ? q | 0x20 : q
            if lp != lq { return false }
        }
        return true
    }

    /// True when the UTF-8 bytes hold `byte` (an ASCII byte: it never appears inside a multi-byte
    /// character). On contiguous bytes: the generic `utf8.contains` steps through the view, about
    /// 300 instructions for an address on every proxied request.
    @inlinable
    public func containsASCII(_ byte: UInt8) -> Bool {
        utf8.withContiguousStorageIfAvailable { bytes in
            for b in bytes where b == byte { return true }
            return false
        } ?? utf8.contains(byte)
    }

    @inlinable
    public func trimmingASCIIWhitespace() -> Substring {
        // On the UTF-8 view: space and tab are single bytes, and Character comparison is far slower.
        let s = Substring(self)
        let bytes = s.utf8
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while end > start {
            let before = bytes.index(before: end)
            guard bytes[before] == 0x20 || bytes[before] == 0x09 else { break }
            end = before
        }
        return s[start..<end]
    }
}
