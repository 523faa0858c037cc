import CByteScan

/// Finding a byte in contiguous bytes, for the parsers outside this module (cookies): the C
/// library's `memchr` reads a vector at a time where a Swift loop reads a byte.
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
}
