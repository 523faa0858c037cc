/// Decodes the chunked transfer coding (RFC 9112 §7.1), resumable at any byte boundary.
///
/// ```
/// chunked-body = *chunk last-chunk trailer-section CRLF
/// chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
/// ```
/// Body bytes are handed out as slices of the input (no copy). Chunk sizes are bounded (at most 16
/// hex digits and 2^53), size lines by `maxChunkLineBytes`, trailers by `maxTrailerBytes`; trailer
/// fields are checked like header fields and then discarded. Every CRLF must be a real CRLF.
///
/// For example:
/// ```swift
/// let used = try decoder.decode(buffer) { piece in body.append(contentsOf: piece) }
/// ```
public struct ChunkedDecoder: Sendable {
    private enum State: Sendable {
        case size, sizeWhitespace, chunkExtension, sizeLF
        case data, dataCR, dataLF
        case trailerLineStart, trailerName, trailerValue, trailerLF, finalLF
        case complete
    }

    public let limits: HTTPParserLimits
    private var state = State.size
    private var chunkSize = 0
    private var sizeDigits = 0
    private var lineBytes = 0
    private var remaining = 0
    private var trailerBytes = 0

    public init(limits: HTTPParserLimits = .init()) {
        self.limits = limits
    }

    /// True once the last chunk and the trailer section (with its final CRLF) have been decoded.
    public var isComplete: Bool { state == .complete }

    /// Decodes as much of `input` as possible.
    ///
    /// - Parameter onData: called with each run of body bytes, a slice of `input` valid only during
    ///   the call.
    /// - Returns: the bytes of `input` consumed. Less than `input.count` only once complete: the rest
    ///   belongs to the next message. Unconsumed bytes are never needed again, so the caller may drop
    ///   everything it passed except that rest.
    /// - Throws: `invalidChunkSize`, `invalidChunkExtension`, `chunkLineTooLong`,
    ///   `invalidChunkFraming`, `invalidTrailer`, `trailerTooLarge`. The connection must then close.
    public mutating func decode(_ input: UnsafeRawBufferPointer,
                                onData: (UnsafeRawBufferPointer) -> Void) throws(HTTPParseError) -> Int {
        var i = 0
        let count = input.count
        while i < count {
            if state == .data {
                let take = min(remaining, count - i)
                onData(UnsafeRawBufferPointer(rebasing: input[i..<(i + take)]))
                remaining -= take
                i += take
                if remaining == 0 { state = .dataCR }
                continue
            }
            if state == .complete { return i }
            try step(input[i])
            i += 1
        }
        return i
    }

    /// Advances the line states by one byte.
    private mutating func step(_ b: UInt8) throws(HTTPParseError) {
        switch state {
        case .size, .sizeWhitespace, .chunkExtension:
            if b == ASCII.cr {
                // Whitespace after the size is only allowed before a `;` (chunk-ext starts with BWS ";").
                guard sizeDigits > 0, state != .sizeWhitespace else { throw .invalidChunkSize }
                state = .sizeLF
                return
            }
            if b == ASCII.lf { throw .invalidChunkFraming }
            lineBytes += 1
            if lineBytes > limits.maxChunkLineBytes { throw .chunkLineTooLong(limit: limits.maxChunkLineBytes) }
            try sizeLineByte(b)
        case .sizeLF:
            guard b == ASCII.lf else { throw .invalidChunkFraming }
            if chunkSize == 0 {
                state = .trailerLineStart
            } else {
                remaining = chunkSize
                state = .data
            }
        case .dataCR:
            guard b == ASCII.cr else { throw .invalidChunkFraming }
            state = .dataLF
        case .dataLF:
            guard b == ASCII.lf else { throw .invalidChunkFraming }
            chunkSize = 0
            sizeDigits = 0
            lineBytes = 0
            state = .size
        case .trailerLineStart, .trailerName, .trailerValue, .trailerLF, .finalLF:
            trailerBytes += 1
            if trailerBytes > limits.maxTrailerBytes { throw .trailerTooLarge(limit: limits.maxTrailerBytes) }
            try trailerByte(b)
        case .data, .complete:
            break  // handled by decode
        }
    }

    /// `chunk-size [ BWS ";" chunk-ext ]`: hex digits, then optional whitespace that must lead to `;`.
    private mutating func sizeLineByte(_ b: UInt8) throws(HTTPParseError) {
        switch state {
        case .size:
            if let digit = ASCII.hexValue(b) {
                sizeDigits += 1
                chunkSize = chunkSize &* 16 &+ digit
                guard sizeDigits <= 16, chunkSize <= maxFramingLength else { throw .invalidChunkSize }
            } else if b == ASCII.semicolon {
                guard sizeDigits > 0 else { throw .invalidChunkSize }
                state = .chunkExtension
            } else if ASCII.isWhitespace(b) {
                guard sizeDigits > 0 else { throw .invalidChunkSize }
                state = .sizeWhitespace
            } else {
                throw .invalidChunkSize
            }
        case .sizeWhitespace:
            if b == ASCII.semicolon {
                state = .chunkExtension
            } else if !ASCII.isWhitespace(b) {
                throw .invalidChunkSize
            }
        default:
            // Extensions are ignored, but may hold no control characters (quoted strings included).
            guard ASCII.isFieldValueChar(b) else { throw .invalidChunkExtension }
        }
    }

    /// Trailer field lines, checked like header fields and discarded (RFC 9112 §7.1.2).
    private mutating func trailerByte(_ b: UInt8) throws(HTTPParseError) {
        if b == ASCII.lf, state != .trailerLF, state != .finalLF { throw .invalidChunkFraming }
        switch state {
        case .trailerLineStart:
            if b == ASCII.cr {
                state = .finalLF
            } else if ASCII.isTokenChar(b) {
                state = .trailerName
            } else {
                throw .invalidTrailer  // obs-fold or a bad name byte
            }
        case .trailerName:
            if b == ASCII.colon {
                state = .trailerValue
            } else if !ASCII.isTokenChar(b) {
                throw .invalidTrailer  // whitespace before the colon, missing colon, bad name byte
            }
        case .trailerValue:
            if b == ASCII.cr {
                state = .trailerLF
            } else if !ASCII.isFieldValueChar(b) {
                throw .invalidTrailer
            }
        case .trailerLF:
            guard b == ASCII.lf else { throw .invalidChunkFraming }
            state = .trailerLineStart
        case .finalLF:
            guard b == ASCII.lf else { throw .invalidChunkFraming }
            state = .complete
        default:
            break
        }
    }
}
