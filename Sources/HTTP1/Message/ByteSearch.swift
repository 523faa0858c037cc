import CByteScan

/// Finding and comparing bytes in contiguous storage, for the parsers outside this module (cookies,
/// own paths): the C library's `memchr` and `memcmp` read a vector at a time where a Swift loop reads
/// a byte, and the generic `elementsEqual` costs a few hundred instructions a call.
public enum ByteSearch {
    /// The offset of the first `byte` in `bytes[from..<to]`, or `to`.
    @inlinable
    public static func firstIndex(of byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from: Int, to: Int) -> Int {
        guard from < to, let base = bytes.baseAddress else { return to }
        return find(byte, base, from, to)
    }

    @usableFromInline
    static func find(_ byte: UInt8, _ base: UnsafePointer<UInt8>, _ from: Int, _ to: Int) -> Int {
        gatehouse_find_byte(base, from, to, byte)
    }

    /// True when `a` and `b` hold the same bytes.
    @inlinable
    public static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress else { return true }
        return same(x, y, a.count)
    }

    /// True when `a` and `b` are the same bytes but for the case of ASCII letters.
    @inlinable
    public static func equalIgnoringASCIICase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress else { return true }
        return equalIgnoringASCIICase(x, y, count: a.count)
    }

    /// True when the `count` bytes at `a` and `b` are the same but for the case of ASCII letters.
    @inlinable @inline(__always)
    public static func equalIgnoringASCIICase(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, count: Int) -> Bool {
        var i = 0
        while i < count {
            let x = a[i], y = b[i]
            if x != y {
                let fx = x &- 65 < 26 ? x | 0x20 : x
                let fy = y &- 65 < 26 ? y | 0x20 : y
                if fx != fy { return false }
            }
            i += 1
        }
        return true
    }

    /// True when the `count` bytes at `a` and at `lowercase` (an ASCII name already in lowercase)
    /// are the same but for the case of ASCII letters in `a`.
    @inlinable @inline(__always)
    public static func equalToLowercase(_ a: UnsafePointer<UInt8>, _ lowercase: UnsafePointer<UInt8>, count: Int) -> Bool {
        var i = 0
        while i < count {
            let x = a[i]
            let folded = x &- 65 < 26 ? x | 0x20 : x
            if folded != lowercase[i] { return false }
            i += 1
        }
        return true
    }

    /// True when `a` spells `literal` (an ASCII name) but for the case of ASCII letters.
    @inlinable
    public static func equalIgnoringASCIICase(_ a: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        guard a.count == literal.utf8CodeUnitCount else { return false }
        guard let x = a.baseAddress else { return true }
        return equalIgnoringASCIICase(x, literal.utf8Start, count: a.count)
    }

    @usableFromInline
    static func same(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        gatehouse_bytes_equal(a, b, count) != 0
    }
}
