/// A request path as RFC 3986 §6.2.2 compares it, and the re-spellings a lenient server reads as
/// the same path: what the route table needs so that no spelling of a route's prefix escapes
/// that route's policy.
///
/// Pure functions on bytes; `Shape` is one pass without allocating, so paths that cannot be
/// re-spelled (the common case) cost nothing more.
enum CanonicalPath {
    /// What one pass over a path saw.
    struct Shape {
        /// A `%`: escapes to decode (or a malformed one).
        var hasEscapes = false
        /// `;`, `//` or an ASCII capital: a lenient reader may see another prefix.
        var hasLooseSpelling = false

        var mayBeRespelled: Bool { hasEscapes || hasLooseSpelling }

        init(_ path: UnsafeBufferPointer<UInt8>) {
            var previous: UInt8 = 0
            for byte in path {
                if byte == UInt8(ascii: "%") {
                    hasEscapes = true
                } else if byte == UInt8(ascii: ";") || byte &- 65 < 26
                            || (byte == UInt8(ascii: "/") && previous == UInt8(ascii: "/")) {
                    hasLooseSpelling = true
                }
                previous = byte
            }
        }
    }

    /// `path` with every escape of an unreserved character (`ALPHA / DIGIT / - . _ ~`) decoded and
    /// the hex digits of the others upper-cased (§6.2.2.1, §6.2.2.2); `malformed` when a `%` is not
    /// followed by two hex digits (kept as it was).
    static func decodingUnreserved(_ path: UnsafeBufferPointer<UInt8>) -> (bytes: [UInt8], malformed: Bool) {
        var out: [UInt8] = []
        out.reserveCapacity(path.count)
        var malformed = false
        var i = 0
        while i < path.count {
            let byte = path[i]
            guard byte == UInt8(ascii: "%") else { out.append(byte); i += 1; continue }
            guard i + 2 < path.count, let high = hexValue(path[i + 1]), let low = hexValue(path[i + 2]) else {
                malformed = true
                out.append(byte)
                i += 1
                continue
            }
            let decoded = high << 4 | low
            if isUnreserved(decoded) {
                out.append(decoded)
            } else {
                out.append(byte)
                out.append(upperHex(high))
                out.append(upperHex(low))
            }
            i += 3
        }
        return (out, malformed)
    }

    /// True when `path` names a prefix of these `segments` (lowercase, without `;params`) to a
    /// server that skips empty segments, cuts `;params` (also written `%3B`) and folds ASCII case.
    static func looselyStarts(_ path: UnsafeBufferPointer<UInt8>, with segments: [[UInt8]]) -> Bool {
        var i = 0
        let n = path.count
        for segment in segments {
            guard i < n, path[i] == UInt8(ascii: "/") else { return false }
            while i < n && path[i] == UInt8(ascii: "/") { i += 1 }
            let start = i
            var end = -1
            while i < n && path[i] != UInt8(ascii: "/") {
                if end < 0 && (path[i] == UInt8(ascii: ";") || isEscapedSemicolon(path, at: i)) { end = i }
                i += 1
            }
            let name = UnsafeBufferPointer(rebasing: path[start..<(end < 0 ? i : end)])
            guard name.count == segment.count else { return false }
            for k in 0..<name.count {
                let x = name[k]
                if (x &- 65 < 26 ? x | 0x20 : x) != segment[k] { return false }
            }
        }
        return i == n || path[i] == UInt8(ascii: "/")
    }

    private static func isEscapedSemicolon(_ path: UnsafeBufferPointer<UInt8>, at i: Int) -> Bool {
        i + 2 < path.count && path[i] == UInt8(ascii: "%") && path[i + 1] == UInt8(ascii: "3")
            && path[i + 2] | 0x20 == UInt8(ascii: "b")
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~")
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        if byte &- UInt8(ascii: "0") < 10 { return byte - UInt8(ascii: "0") }
        let lower = byte | 0x20
        if lower &- UInt8(ascii: "a") < 6 { return lower - UInt8(ascii: "a") + 10 }
        return nil
    }

    private static func upperHex(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }
}
