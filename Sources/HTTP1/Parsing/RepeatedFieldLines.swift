import CByteScan

/// The field lines of a connection's previous head, as bytes, with the fields parsed from them.
///
/// A keep-alive client (or upstream) sends mostly the same field lines every time. A line whose
/// bytes equal the previous head's line at the same position parses to the same field, which the
/// same rules already accepted: it is neither checked nor turned into Strings again (one byte
/// comparison instead of about 300 instructions of checks and String work a line).
struct RepeatedFieldLines: Sendable {
    /// The previous head's field lines, each followed by its CRLF.
    private var bytes: [UInt8] = []
    /// Where each of those lines starts and ends (its CR) in `bytes`.
    private var lines: [Range<Int>] = []
    /// The fields parsed from them, one per line, in order.
    private(set) var fields = HTTPHeaders()
    /// The current head's lines while it is parsed (swapped in once it parsed without error).
    private var pending: [Range<Int>] = []
    private var pendingStart = 0

    var count: Int { lines.count }

    /// True when the line at `index` of the previous head is exactly the `length` bytes at `line`.
    @inline(__always)
    func isLine(_ index: Int, equalTo line: UnsafeRawPointer, length: Int) -> Bool {
        let range = lines[index]
        guard range.count == length else { return false }
        return bytes.withUnsafeBytes { stored in
            length == 0 || gatehouse_bytes_equal(stored.baseAddress! + range.lowerBound, line, length) != 0
        }
    }

    /// Starts collecting the lines of a head whose field lines begin at `start` of its buffer.
    mutating func begin(at start: Int) {
        pending.removeAll(keepingCapacity: true)
        pendingStart = start
    }

    /// Notes the next line of the head being parsed, `[start, cr)` of its buffer.
    @inline(__always)
    mutating func note(lineFrom start: Int, to cr: Int) {
        pending.append((start - pendingStart)..<(cr - pendingStart))
    }

    /// The head parsed without error: its lines (`[pendingStart, end)` of `buffer`) and fields are
    /// the ones the next head is compared with.
    mutating func remember(_ buffer: UnsafeRawBufferPointer, end: Int, fields: HTTPHeaders) {
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[pendingStart..<end]))
        swap(&lines, &pending)
        self.fields = fields
    }

    /// Gives the memory back (an idle connection); the next head is parsed from scratch.
    mutating func forget() {
        self = RepeatedFieldLines()
    }
}
