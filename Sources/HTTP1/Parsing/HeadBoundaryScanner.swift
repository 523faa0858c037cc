import CByteScan

/// Finds where a head ends (the empty line after the field lines), resumably.
///
/// It remembers the offset and line state it reached, so a client that sends its head one byte per
/// packet costs O(n) in total (picohttpparser keeps `last_len` for the same reason). It refuses bare
/// CR/LF, too many lines and too many bytes as soon as they arrive, before the head is complete.
struct HeadBoundaryScanner: Sendable {
    /// Where one head starts and ends inside the buffer.
    struct Boundary: Equatable {
        /// Offset of the start line (after any ignored empty lines).
        var startLine: Int
        /// Offset just past the CRLF of the empty line that ends the head.
        var end: Int
        /// Non-empty lines in the head (the start line and the field lines): lets the parser size
        /// its field list once.
        var lineCount = 0
    }

    private enum LineState {
        case lineStart          // at the first byte of a line
        case inLine             // inside a non-empty line
        case crInLine           // a CR ended a non-empty line; LF must follow
        case crAtLineStart      // a CR opened a line; LF must follow (empty line)
    }

    private var offset = 0
    private var state = LineState.lineStart
    private var completedLines = 0
    private var leadingEmptyLines = 0
    private var startLine = 0
    /// The field lines of the last complete head, which the next head reuses where its lines are
    /// the same (`FieldLineParser.parseFields`). Kept across `reset()`: only a connection's own
    /// heads are compared with each other.
    private var repeated = RepeatedFieldLines()
    /// Bytes examined since creation (tests use it to prove the scan is linear).
    private(set) var scannedByteCount = 0

    let limits: HTTPParserLimits
    let allowedLeadingEmptyLines: Int
    let leadingEmptyLineError: HTTPParseError

    init(limits: HTTPParserLimits, allowedLeadingEmptyLines: Int, leadingEmptyLineError: HTTPParseError) {
        self.limits = limits
        self.allowedLeadingEmptyLines = allowedLeadingEmptyLines
        self.leadingEmptyLineError = leadingEmptyLineError
    }

    /// Drops the previous head's lines (an idle connection gives its memory back).
    mutating func forgetPreviousHead() {
        repeated.forget()
    }

    mutating func reset() {
        offset = 0
        state = .lineStart
        completedLines = 0
        leadingEmptyLines = 0
        startLine = 0
    }

    /// The start line and the fields of the next complete head, or nil while it is incomplete. Once a
    /// head is complete the scanner is ready for the next one; the start line is parsed before the
    /// fields, so its error wins.
    @inline(__always)
    mutating func parseHead<StartLine>(
        _ bytes: UnsafeRawBufferPointer,
        startLine parseStartLine: (UnsafeRawBufferPointer, _ from: Int, _ to: Int) throws(HTTPParseError) -> StartLine
    ) throws(HTTPParseError) -> (startLine: StartLine, headers: HTTPHeaders, consumed: Int)? {
        if let startLineEnd = repeatedHeadStartLineEnd(bytes) {
            // The previous head's fields, as `parseFields` would give them for the same lines
            // (without comparing the lines a second time).
            reset()
            let startLine = try parseStartLine(bytes, 0, startLineEnd)
            return (startLine, repeated.fields, startLineEnd + 2 + repeated.lineBytes + 2)
        }
        guard let boundary = try scan(bytes) else { return nil }
        reset()
        let lineEnd = FieldLineParser.lineEnd(bytes, from: boundary.startLine, to: boundary.end)
        let startLine = try parseStartLine(bytes, boundary.startLine, lineEnd)
        let headers = try FieldLineParser.parseFields(bytes, from: lineEnd + 2, to: boundary.end,
                                                      expectedCount: boundary.lineCount - 1, repeated: &repeated)
        return (startLine, headers, boundary.end)
    }

    /// Where the start line ends (its CR) in a head whose field lines are exactly the previous
    /// head's (a keep-alive client or upstream sending the same lines again): one search for the
    /// start line's end and one comparison instead of a walk over every line. The same bytes
    /// passed the same checks before (bare CR or LF, line count); the start line is new and is
    /// checked by its parser as always, and the size limit is checked again (the start line may be
    /// longer). nil when the head is not such a head, or not all there yet: then `scan` decides,
    /// from the first byte.
    private func repeatedHeadStartLineEnd(_ bytes: UnsafeRawBufferPointer) -> Int? {
        let fieldBytes = repeated.lineBytes
        guard fieldBytes > 0, offset == 0, state == .lineStart, let start = bytes.baseAddress else { return nil }
        let base = start.assumingMemoryBound(to: UInt8.self)
        let count = bytes.count
        // A leading empty line (or a control byte) first: the full scan, which knows the rules.
        guard count > 0, base[0] > ASCII.cr else { return nil }
        let cr = gatehouse_find_control(base, 1, count)
        let lines = cr + 2
        let end = lines + fieldBytes + 2
        guard end <= count, end <= limits.maxHeadBytes, base[cr] == ASCII.cr, base[cr + 1] == ASCII.lf,
              base[end - 2] == ASCII.cr, base[end - 1] == ASCII.lf,
              repeated.allLinesEqual(start + lines, length: fieldBytes) else { return nil }
        return cr
    }

    /// Scans the bytes not seen yet. Returns the boundary once the head is complete, nil while it is not.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Boundary? {
        // The buffer must only grow between calls; if a caller shrank it, start over rather than trust
        // stale state.
        if bytes.count < offset { reset() }
        let limit = min(bytes.count, max(0, limits.maxHeadBytes))
        var i = offset
        guard i < limit, let start = bytes.baseAddress else {
            if bytes.count > limits.maxHeadBytes { throw .headTooLarge(limit: limits.maxHeadBytes) }
            return nil
        }
        let base = start.assumingMemoryBound(to: UInt8.self)
        defer {
            scannedByteCount &+= i - offset
            offset = i
        }
        while i < limit {
            let b = bytes[i]
            switch state {
            case .inLine:
                // Hot loop: most bytes are line content; skip them without the state switch.
                if b > ASCII.cr {
                    i = gatehouse_find_control(base, i + 1, limit)
                    continue
                }
                if b == ASCII.cr {
                    // The usual end of a line: CR LF and the next line's first byte (not CR, LF or
                    // another control): the line is counted and the scan goes on in the next line,
                    // without the two state steps in between.
                    if i + 2 < limit, base[i + 1] == ASCII.lf, base[i + 2] > ASCII.cr {
                        completedLines += 1
                        if completedLines - 1 > limits.maxHeaderCount {
                            throw .tooManyHeaders(limit: limits.maxHeaderCount)
                        }
                        i = gatehouse_find_control(base, i + 3, limit)
                        continue
                    }
                    state = .crInLine
                } else if b == ASCII.lf {
                    throw .bareLF(offset: i)
                }
            case .lineStart:
                if b == ASCII.cr {
                    state = .crAtLineStart
                } else if b == ASCII.lf {
                    throw .bareLF(offset: i)
                } else {
                    state = .inLine
                }
            case .crInLine:
                guard b == ASCII.lf else { throw .bareCR(offset: i - 1) }
                completedLines += 1
                // The start line plus at most maxHeaderCount field lines.
                if completedLines - 1 > limits.maxHeaderCount {
                    throw .tooManyHeaders(limit: limits.maxHeaderCount)
                }
                state = .lineStart
            case .crAtLineStart:
                guard b == ASCII.lf else { throw .bareCR(offset: i - 1) }
                if completedLines == 0 {
                    // RFC 9112 §2.2: ignore at least one empty line before the request line.
                    leadingEmptyLines += 1
                    if leadingEmptyLines > allowedLeadingEmptyLines { throw leadingEmptyLineError }
                    startLine = i + 1
                    state = .lineStart
                } else {
                    i += 1
                    let boundary = Boundary(startLine: startLine, end: i, lineCount: completedLines)
                    return boundary
                }
            }
            i += 1
        }
        if bytes.count > limits.maxHeadBytes { throw .headTooLarge(limit: limits.maxHeadBytes) }
        return nil
    }
}
