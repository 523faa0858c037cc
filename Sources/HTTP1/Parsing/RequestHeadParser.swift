import CByteScan

/// Parses the head of one HTTP/1.1 request from the start of a connection's read buffer.
///
/// Strict in the way RFC 9112 allows a server to be: every line ends in CRLF, no obs-fold, no
/// whitespace before a colon, exactly one Host for HTTP/1.1, origin-form targets only. Resumable: while
/// the head is incomplete it remembers how far it scanned, so the caller simply calls again with the
/// grown buffer.
///
/// For example:
/// ```swift
/// var parser = RequestHeadParser()
/// if case .complete(let head, let consumed) = try buffer.withUnsafeBytes({ try parser.parse($0) }) { … }
/// ```
///
/// Body framing (Content-Length / Transfer-Encoding) is checked separately by
/// ``BodyFramingRules/request(_:)``, which the caller runs on the complete head.
public struct RequestHeadParser: Sendable {
    /// RFC 9112 §2.2 asks to ignore "at least one" empty line before the request line; a few cover
    /// clients that end a body with an extra CRLF, more is noise.
    static let allowedLeadingEmptyLines = 4

    public let limits: HTTPParserLimits
    private var scanner: HeadBoundaryScanner
    /// The fields (and version) whose `Host` last passed `HostField.validate`: the scanner hands
    /// back the very same list when a client repeats its field lines, and the same list passes the
    /// same check (holding it keeps its storage from being another list's).
    private var hostValidated: (headers: HTTPHeaders, version: HTTPVersion)?

    public init(limits: HTTPParserLimits = .init()) {
        self.limits = limits
        scanner = HeadBoundaryScanner(limits: limits, allowedLeadingEmptyLines: Self.allowedLeadingEmptyLines,
                                      leadingEmptyLineError: .tooManyLeadingEmptyLines)
    }

    /// Bytes examined by the boundary scan since this parser was created (for linearity tests).
    var scannedByteCount: Int { scanner.scannedByteCount }

    /// Parses one request head at the start of `bytes`.
    ///
    /// `bytes` is the connection's read buffer: between calls that returned `.incomplete` it may only
    /// grow at its end (its start stays put). After `.complete` the parser is ready for the next
    /// request, whose head must then start at offset 0 of the buffer passed next.
    ///
    /// - Returns: `.incomplete` until the empty line that ends the head has arrived, then the head and
    ///   the number of bytes it took (leading empty lines included).
    /// - Throws: `HTTPParseError`; `headTooLarge` as soon as more than `maxHeadBytes` arrive without
    ///   the end of the head. After an error the connection must be closed (or `reset()` called).
    ///   `remembering`: whether the previous head's field lines and validated `Host` may answer
    ///   for this head's (`SpeedLayer`); false parses it as a connection's first.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer,
                               remembering: Bool = true) throws(HTTPParseError) -> HeadParseResult<HTTPRequestHead> {
        if !remembering { forgetPreviousHead() }
        guard let (line, headers, consumed) = try scanner.parseHead(bytes, startLine: StartLineParser.requestLine) else {
            return .incomplete
        }
        let head = HTTPRequestHead(method: line.method, target: line.target, version: line.version, headers: headers)
        if let last = hostValidated, last.version == head.version, last.headers.isSameStorage(as: head.headers) {
            return .complete(head, consumed: consumed)
        }
        try HostField.validate(head)
        hostValidated = (head.headers, head.version)
        return .complete(head, consumed: consumed)
    }

    /// Drops what it kept of the previous head to recognise repeated field lines (an idle
    /// connection gives its memory back); the next head is parsed from scratch.
    public mutating func forgetPreviousHead() {
        scanner.forgetPreviousHead()
        hostValidated = nil
    }

    /// Forgets a partial head (e.g. after a timeout), ready to parse from offset 0 again.
    public mutating func reset() {
        scanner.reset()
    }
}

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

/// The request line (RFC 9112 §3) and the status line (RFC 9112 §4).
enum StartLineParser {
    struct RequestLine {
        var method: String
        var target: String
        var version: HTTPVersion
    }

    /// `HTTP-version = HTTP-name "/" DIGIT "." DIGIT` with the case-sensitive name `HTTP` (§2.3).
    static func version(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> HTTPVersion? {
        guard end - start == 8,
              bytes[start] == 0x48, bytes[start + 1] == 0x54, bytes[start + 2] == 0x54,
              bytes[start + 3] == 0x50, bytes[start + 4] == ASCII.slash,
              ASCII.isDigit(bytes[start + 5]), bytes[start + 6] == ASCII.dot, ASCII.isDigit(bytes[start + 7])
        else { return nil }
        return HTTPVersion(major: Int(bytes[start + 5] - 0x30), minor: Int(bytes[start + 7] - 0x30))
    }

    static func isSupported(_ version: HTTPVersion) -> Bool {
        version == .http1_1 || version == .http1_0
    }

    /// `method SP request-target SP HTTP-version` in `[start, end)`, exactly one SP between parts.
    static func requestLine(_ bytes: UnsafeRawBufferPointer, from start: Int,
                            to end: Int) throws(HTTPParseError) -> RequestLine {
        // method = token, ended by the first SP.
        var i = start
        while i < end, ASCII.isTokenChar(bytes[i]) { i += 1 }
        if i == end { throw i == start ? HTTPParseError.invalidMethod : HTTPParseError.invalidRequestLine }
        guard i > start, bytes[i] == ASCII.space else { throw .invalidMethod }
        let methodEnd = i

        // The version follows the last SP; everything between is the target, which may hold no SP.
        var lastSpace = end - 1
        while lastSpace > methodEnd, bytes[lastSpace] != ASCII.space { lastSpace -= 1 }
        let targetStart = methodEnd + 1
        guard lastSpace > methodEnd, targetStart < lastSpace, bytes[targetStart] != ASCII.space,
              bytes[lastSpace - 1] != ASCII.space else {
            throw .invalidRequestLine
        }

        guard let version = version(bytes, from: lastSpace + 1, to: end) else { throw .invalidVersion }
        guard isSupported(version) else {
            throw .unsupportedVersion(major: version.major, minor: version.minor)
        }

        // Visible ASCII only; in the path (before `?`) none of the bytes RFC 3986 §3.3 leaves out
        // of a path, and no `#` anywhere (a fragment is never sent). An upstream that parses the
        // path as a URI reference would otherwise read `/api/x/..#` as climbing out of a route's
        // prefix. Browsers percent-encode all of these but `^` and `|` (WHATWG URL).
        var inPath = true
        for j in targetStart..<lastSpace {
            let b = bytes[j]
            guard ASCII.isVisible(b) else { throw .invalidTarget }
            if b == UInt8(ascii: "?") { inPath = false }
            else if b == UInt8(ascii: "#") || (inPath && ASCII.isExcludedFromPath(b)) { throw .invalidTarget }
        }
        let method = FieldText.method(UnsafeRawBufferPointer(rebasing: bytes[start..<methodEnd]))
        let isAsterisk = lastSpace - targetStart == 1 && bytes[targetStart] == ASCII.star
        // RFC 9112 §3.2: origin-form for everything we serve; asterisk-form only for OPTIONS.
        // Absolute-form and authority-form are refused so nothing can route by a target's authority.
        if isAsterisk {
            guard method == "OPTIONS" else { throw .invalidTarget }
        } else if bytes[targetStart] != ASCII.slash {
            throw .invalidTarget
        }
        let target = FieldText.ascii(UnsafeRawBufferPointer(rebasing: bytes[targetStart..<lastSpace]))
        return RequestLine(method: method, target: target, version: version)
    }

    /// `HTTP-version SP status-code SP [ reason-phrase ]`; a missing `SP reason` is accepted too.
    static func statusLine(_ bytes: UnsafeRawBufferPointer, from start: Int,
                           to end: Int) throws(HTTPParseError) -> (HTTPVersion, Int) {
        guard end - start >= 12, bytes[start + 8] == ASCII.space else { throw .invalidStatusLine }
        guard let version = version(bytes, from: start, to: start + 8) else { throw .invalidStatusLine }
        guard isSupported(version) else {
            throw .unsupportedVersion(major: version.major, minor: version.minor)
        }
        var status = 0
        for i in (start + 9)..<(start + 12) {
            guard ASCII.isDigit(bytes[i]) else { throw .invalidStatusLine }
            status = status * 10 + Int(bytes[i] - 0x30)
        }
        // RFC 9110 §15: status codes are 100...599.
        guard (100...599).contains(status) else { throw .invalidStatusLine }
        if end > start + 12 {
            guard bytes[start + 12] == ASCII.space else { throw .invalidStatusLine }
            for i in (start + 13)..<end where !ASCII.isFieldValueChar(bytes[i]) { throw .invalidStatusLine }
        }
        return (version, status)
    }
}

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
