/// One head written into a piece of memory sized beforehand (an upper bound of its length), then
/// appended to the output with one call.
///
/// Appending piece by piece to the output array cost a uniqueness and capacity check per piece,
/// about a dozen per head and the larger part of writing one (`bench/instructions`). Every write is
/// checked against the capacity: an upper bound that was too small stops the process rather than
/// write past the memory.
struct HeadBuffer {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0

    /// Writes a head of at most `capacity` bytes with `body`, then appends it to `bytes`.
    @inline(__always)
    static func append(to bytes: inout [UInt8], capacity: Int, _ body: (inout HeadBuffer) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { memory in
            var head = HeadBuffer(base: memory.baseAddress!, capacity: capacity)
            body(&head)
            bytes.append(contentsOf: UnsafeBufferPointer(start: memory.baseAddress!, count: head.count))
        }
    }

    private init(base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        precondition(count < capacity, "head larger than its computed size")
        base[count] = value
        count += 1
    }

    @inline(__always)
    mutating func bytes(_ source: UnsafeBufferPointer<UInt8>) {
        precondition(source.count <= capacity - count, "head larger than its computed size")
        if let from = source.baseAddress { (base + count).initialize(from: from, count: source.count) }
        count += source.count
    }

    @inline(__always)
    mutating func text(_ literal: StaticString) {
        bytes(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    mutating func utf8(_ text: String) {
        let copied = text.utf8.withContiguousStorageIfAvailable { bytes($0) } != nil
        if !copied { for b in text.utf8 { byte(b) } }
    }

    /// A non-negative number in decimal (at most 20 bytes).
    mutating func decimal(_ value: Int) {
        guard value > 0 else {
            if value == 0 { byte(UInt8(ascii: "0")) } else { utf8(String(value)) }
            return
        }
        // Digits counted by comparison (a division per digit was counted twice).
        var digits = 1
        var power = 10
        while digits < 19 && value >= power {
            digits += 1
            power &*= 10
        }
        precondition(digits <= capacity - count, "head larger than its computed size")
        var rest = value
        for position in stride(from: count + digits - 1, through: count, by: -1) {
            base[position] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        count += digits
    }

    /// `text` with every byte not `allowed` as `%XX` (at most three bytes per byte of `text`).
    mutating func percentEncoded(_ text: String, allowed: (UInt8) -> Bool) {
        let copied = text.utf8.withContiguousStorageIfAvailable { raw -> Bool in
            for b in raw where !allowed(b) { return false }
            bytes(raw)
            return true
        } ?? false
        if copied { return }
        for b in text.utf8 {
            if allowed(b) {
                byte(b)
            } else {
                byte(UInt8(ascii: "%"))
                byte(Self.hexDigit(b >> 4))
                byte(Self.hexDigit(b & 0x0F))
            }
        }
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x41 + nibble - 10 }

    /// The framing the connection decided on: `Content-Length: n\r\n` or
    /// `Transfer-Encoding: chunked\r\n`, or nothing (at most `framingSize` bytes).
    mutating func framing(contentLength: Int?, chunked: Bool) {
        if let contentLength {
            text("Content-Length: ")
            decimal(contentLength)
            byte(ASCII.cr)
            byte(ASCII.lf)
        }
        if chunked { text("Transfer-Encoding: chunked\r\n") }
    }

    static let framingSize = 16 + 20 + 2 + 28
}
