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

    /// The most bytes a field can take: `name: value\r\n`.
    @inline(__always)
    static func size(of field: HTTPField) -> Int { field.name.utf8.count + field.value.utf8.count + 4 }

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
        var digits = 0
        var rest = value
        while rest > 0 { digits += 1; rest /= 10 }
        precondition(digits <= capacity - count, "head larger than its computed size")
        rest = value
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

    /// `name: value\r\n` (at most `size(of: field)` bytes), or nothing when the field is not safe
    /// to write (`HeadWriter.isSafe`); a field already `checked` is copied as it is.
    mutating func field(_ field: HTTPField, checked: Bool) {
        let written = field.name.utf8.withContiguousStorageIfAvailable { name -> Bool in
            field.value.utf8.withContiguousStorageIfAvailable { value -> Bool in
                guard checked || (HeadWriter.isToken(name) && HeadWriter.isFieldValue(value)) else { return true }
                line(name, value)
                return true
            } ?? false
        } ?? false
        guard !written, checked || HeadWriter.isSafe(field) else { return }
        utf8(field.name)
        byte(ASCII.colon)
        byte(ASCII.space)
        utf8(field.value)
        byte(ASCII.cr)
        byte(ASCII.lf)
    }

    /// `name: value\r\n`, checked against the capacity once.
    @inline(__always)
    private mutating func line(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) {
        let total = name.count + value.count + 4
        precondition(total <= capacity - count, "head larger than its computed size")
        let start = base + count
        if let from = name.baseAddress { start.initialize(from: from, count: name.count) }
        start[name.count] = ASCII.colon
        start[name.count + 1] = ASCII.space
        if let from = value.baseAddress { (start + name.count + 2).initialize(from: from, count: value.count) }
        start[total - 2] = ASCII.cr
        start[total - 1] = ASCII.lf
        count += total
    }

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
