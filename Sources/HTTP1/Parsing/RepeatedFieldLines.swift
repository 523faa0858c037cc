import CByteScan

/// The field lines of a connection's previous head, as bytes, with the fields parsed from them.
///
/// A keep-alive client (or upstream) sends mostly the same field lines every time. A line whose
/// bytes equal the previous head's line at the same position parses to the same field, which the
/// same rules already accepted: it is not checked again, and a head whose lines all equal the
/// previous head's (usually only the request line differs) takes the previous field list after one
/// comparison of the whole block (`allLinesEqual`): no allocation, no line looked at.
///
/// One buffer per connection (the lines with their CRLFs, about the size of a head), walked in step
/// with the new head; the server's idle sweep gives it back (`forget`). It is made from a
/// connection's second head on: a connection that sends one request and then idles (most of a
/// thousand held open) keeps nothing more than before; a small buffer made while its first request
/// is parsed kept a heap page of about one in four such connections from being given back.
struct RepeatedFieldLines: Sendable {
    /// The previous head's field lines, each followed by its CRLF.
    private var bytes: [UInt8] = []
    /// The fields parsed from them, one per line, in order.
    private(set) var fields = HTTPHeaders()
    /// Where the previous head's line matching the current line starts in `bytes`.
    private var cursor = 0
    /// Whether a head was parsed before (since the last `forget`).
    private var sawHead = false

    /// The length of the previous head's field lines with their CRLFs (0 when none is kept).
    var lineBytes: Int { bytes.count }

    /// True when the previous head's field lines were exactly the `length` bytes at `lines` (their
    /// CRLFs included, the empty line not): the new head's fields are the previous head's.
    func allLinesEqual(_ lines: UnsafeRawPointer, length: Int) -> Bool {
        guard length > 0, bytes.count == length else { return false }
        return bytes.withUnsafeBytes { gatehouse_bytes_equal($0.baseAddress!, lines, length) != 0 }
    }

    /// Starts comparing a new head with the previous one from its first line.
    mutating func begin() {
        cursor = 0
    }

    /// True when the previous head's next line is exactly the `length` bytes at `line`. Moves on
    /// to the line after it either way (the heads are compared line by line, position by position).
    @inline(__always)
    mutating func nextLineEquals(_ line: UnsafeRawPointer, length: Int) -> Bool {
        guard cursor < bytes.count else { return false }
        let start = cursor
        return bytes.withUnsafeBytes { stored in
            let base = stored.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let count = stored.count
            if start + length + 1 < count, base[start + length] == ASCII.cr, base[start + length + 1] == ASCII.lf,
               gatehouse_bytes_equal(base + start, line, length) != 0 {
                cursor = start + length + 2
                return true
            }
            // Not the same: skip to the end of the previous line (its CR; CR LF end every line).
            var cr = start
            while true {
                cr = gatehouse_find_control(base, cr, count)
                if cr >= count || base[cr] == ASCII.cr { break }
                cr += 1
            }
            cursor = min(cr + 2, count)
            return false
        }
    }

    /// The head parsed without error: its field lines (`[start, end)` of `buffer`, each with its
    /// CRLF) and fields are the ones the next head is compared with.
    mutating func remember(_ buffer: UnsafeRawBufferPointer, from start: Int, to end: Int, fields: HTTPHeaders) {
        bytes.removeAll(keepingCapacity: true)
        if sawHead { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[start..<end])) }
        sawHead = true
        self.fields = fields
    }

    /// Gives the memory back (an idle connection); the next head is parsed from scratch.
    mutating func forget() {
        self = RepeatedFieldLines()
    }
}
