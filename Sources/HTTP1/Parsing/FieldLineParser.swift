import CByteScan

/// Parses the field lines of a head whose CRLF structure the boundary scanner already checked
/// (every CR is followed by LF, no bare LF, the region ends with an empty line).
enum FieldLineParser {
    /// The offset of the CR that ends the line starting at `start` (the scanner guarantees one exists
    /// before `end`; `end` is returned if not, which the callers treat as the end of the head).
    @inline(__always)
    static func lineEnd(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        guard start < end, let base = bytes.baseAddress else { return end }
        // The scanner refused every CR or LF not in a CRLF pair, so the first byte at or below CR
        // that is not an HTAB is this line's CR.
        var i = start
        while true {
            i = gatehouse_find_control(base.assumingMemoryBound(to: UInt8.self), i, end)
            if i >= end || bytes[i] == ASCII.cr { return i }
            i += 1
        }
    }

    /// Parses `field-line CRLF` lines from `start` up to the empty line.
    ///
    /// - Parameter firstLineNumber: the number of the first field line, for error context (the start
    ///   line is line 1).
    /// - Parameter repeated: the connection's previous head (`RepeatedFieldLines`). A line with the
    ///   same bytes as the previous head's line at the same position is that line's field again
    ///   (its bytes copied from there, no second check: the same bytes passed the same rules); a head whose
    ///   lines are all the same shares the previous field list. On success this head becomes the
    ///   one the next is compared with; after an error it stays as it was.
    static func parseFields(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int,
                            firstLineNumber: Int = 2, expectedCount: Int = 0,
                            repeated: inout RepeatedFieldLines) throws(HTTPParseError) -> HTTPHeaders {
        // Built only once a line differs from the previous head (then sized once: the scanner
        // counted the lines; growing the list field by field cost three or four reallocations).
        var headers: HTTPHeaders? = nil
        guard let base = bytes.baseAddress else { return HTTPHeaders() }
        // A keep-alive client usually sends the same field lines again (only the request line
        // differs): one comparison of the whole block, no line looked at. `end` is past the empty
        // line's CRLF.
        if end - start > 2, repeated.allLinesEqual(base + start, length: end - 2 - start) {
            return repeated.fields
        }
        repeated.begin()
        var index = 0
        var lineStart = start
        while lineStart < end {
            let cr = lineEnd(bytes, from: lineStart, to: end)
            if cr == lineStart { break }  // the empty line that ends the head
            let same = index < repeated.fields.count
                && repeated.nextLineEquals(base + lineStart, length: cr - lineStart)
            if !same || headers != nil {
                if headers == nil {
                    // A line is written back at most one byte longer (`name:value` gets its space).
                    var fresh = HTTPHeaders(minimumCapacity: max(expectedCount, index + 1),
                                            bytes: end - start + max(expectedCount, index + 1))
                    fresh.append(fieldsOf: repeated.fields) { reused, _, _ in reused < index }
                    headers = fresh
                }
                if same {
                    headers!.add(fieldAt: index, of: repeated.fields)
                } else {
                    let line = try fieldLine(bytes, from: lineStart, to: cr, lineNumber: firstLineNumber + index)
                    headers!.append(name: line.bytes(in: bytes, line.nameStart, line.nameEnd),
                                    value: line.bytes(in: bytes, line.valueStart, line.valueEnd), checked: true)
                }
            }
            lineStart = cr + 2
            index += 1
        }
        let fields: HTTPHeaders
        if let headers {
            fields = headers
        } else if index == repeated.fields.count {
            fields = repeated.fields  // every line the same: the same list
        } else {
            var prefix = HTTPHeaders(minimumCapacity: index, bytes: end - start + index)
            prefix.append(fieldsOf: repeated.fields) { reused, _, _ in reused < index }
            fields = prefix
        }
        repeated.remember(bytes, from: start, to: lineStart, fields: fields)
        return fields
    }

    /// Where a validated field line's name and value lie in the head's bytes.
    struct LineRanges {
        var nameStart: Int
        var nameEnd: Int
        var valueStart: Int
        var valueEnd: Int

        @inline(__always)
        func bytes(in bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(start: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + start, count: end - start)
        }
    }

    /// Validates one field line and finds its name and value (without surrounding OWS).
    static func fieldLine(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int,
                          lineNumber: Int) throws(HTTPParseError) -> LineRanges {
        // RFC 9112 §5.2: obs-fold is refused; so is whitespace before the first field (§2.2).
        if ASCII.isWhitespace(bytes[start]) { throw .obsoleteLineFolding(line: lineNumber) }
        let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        // The name is the run of tchar at the start; a valid line has its colon right after it.
        var colon = start + gatehouse_token_prefix(base + start, end - start)
        if colon == end || bytes[colon] != ASCII.colon {
            // Which rule the line breaks, in the order RFC 9112 §5 reads.
            while colon < end, bytes[colon] != ASCII.colon { colon += 1 }
            guard colon < end else { throw .missingColon(line: lineNumber) }
            // RFC 9112 §5.1: "No whitespace is allowed between the field name and colon ... A
            // server MUST reject ... with a response status code of 400".
            if colon > start, ASCII.isWhitespace(bytes[colon - 1]) { throw .whitespaceBeforeColon(line: lineNumber) }
            throw .invalidFieldName(line: lineNumber)
        }
        guard colon > start else { throw .invalidFieldName(line: lineNumber) }
        var first = colon + 1, last = end
        while first < last, ASCII.isWhitespace(bytes[first]) { first += 1 }
        while last > first, ASCII.isWhitespace(bytes[last - 1]) { last -= 1 }
        guard gatehouse_is_field_value(base + first, last - first) != 0 else {
            throw .invalidFieldValue(name: FieldText.ascii(UnsafeRawBufferPointer(rebasing: bytes[start..<colon])))
        }
        return LineRanges(nameStart: start, nameEnd: colon, valueStart: first, valueEnd: last)
    }
}
