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
        a.count == b.count && String.asciiFoldedEqual(a, b)
    }

    @usableFromInline
    static func same(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        gatehouse_bytes_equal(a, b, count) != 0
    }
}
