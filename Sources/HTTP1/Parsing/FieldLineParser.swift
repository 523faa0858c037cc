/// Parses the field lines of a head whose CRLF structure the boundary scanner already checked
/// (every CR is followed by LF, no bare LF, the region ends with an empty line).
enum FieldLineParser {
    /// The offset of the CR that ends the line starting at `start` (the scanner guarantees one exists
    /// before `end`; `end` is returned if not, which the callers treat as the end of the head).
    @inline(__always)
    static func lineEnd(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        var i = start
        while i < end, bytes[i] != ASCII.cr { i += 1 }
        return i
    }

    /// Parses `field-line CRLF` lines from `start` up to the empty line.
    ///
    /// - Parameter firstLineNumber: the number of the first field line, for error context (the start
    ///   line is line 1).
    static func parseFields(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int,
                            firstLineNumber: Int = 2, expectedCount: Int = 0) throws(HTTPParseError) -> HTTPHeaders {
        // Sized once (the scanner counted the lines): growing the list field by field cost three or
        // four reallocations per head.
        var headers = HTTPHeaders(minimumCapacity: max(0, expectedCount))
        var lineStart = start
        var lineNumber = firstLineNumber
        while lineStart < end {
            let cr = lineEnd(bytes, from: lineStart, to: end)
            if cr == lineStart { break }  // the empty line that ends the head
            let field = try parseFieldLine(bytes, from: lineStart, to: cr, lineNumber: lineNumber)
            headers.add(field.name, field.value)
            lineStart = cr + 2
            lineNumber += 1
        }
        return headers
    }

    /// Parses one `field-name ":" OWS field-value OWS` (RFC 9112 §5) in `[start, end)`.
    static func parseFieldLine(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int,
                               lineNumber: Int) throws(HTTPParseError) -> HTTPField {
        // RFC 9112 §5.2: obs-fold is refused; so is whitespace before the first field (§2.2).
        if ASCII.isWhitespace(bytes[start]) { throw .obsoleteLineFolding(line: lineNumber) }
        var colon = start
        while colon < end, bytes[colon] != ASCII.colon { colon += 1 }
        guard colon < end else { throw .missingColon(line: lineNumber) }
        guard colon > start else { throw .invalidFieldName(line: lineNumber) }
        // RFC 9112 §5.1: "No whitespace is allowed between the field name and colon ... A server
        // MUST reject ... with a response status code of 400".
        if ASCII.isWhitespace(bytes[colon - 1]) { throw .whitespaceBeforeColon(line: lineNumber) }
        for i in start..<colon where !ASCII.isTokenChar(bytes[i]) {
            throw .invalidFieldName(line: lineNumber)
        }
        let name = FieldText.ascii(UnsafeRawBufferPointer(rebasing: bytes[start..<colon]))
        let value = try fieldValue(bytes, from: colon + 1, to: end, name: name)
        return HTTPField(name: name, value: value)
    }

    /// The value between `start` and `end` without surrounding OWS, checked byte by byte.
    static func fieldValue(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int,
                           name: String) throws(HTTPParseError) -> String {
        var first = start, last = end
        while first < last, ASCII.isWhitespace(bytes[first]) { first += 1 }
        while last > first, ASCII.isWhitespace(bytes[last - 1]) { last -= 1 }
        for i in first..<last where !ASCII.isFieldValueChar(bytes[i]) {
            throw .invalidFieldValue(name: name)
        }
        return FieldText.value(UnsafeRawBufferPointer(rebasing: bytes[first..<last]))
    }
}
