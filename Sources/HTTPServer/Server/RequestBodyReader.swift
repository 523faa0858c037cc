import HTTP1

/// How far a request's body has been consumed and what the next buffered bytes give: a value over
/// byte buffers (no socket), so its framing and limit rules are tested alone.
///
/// A `Content-Length` body is cut at its length (what follows is the next request); a chunked one is
/// decoded and refused once its decoded size passes `maxBodyBytes` (a declared length over the limit
/// is refused before the handler runs, by the connection).
struct RequestBodyReader {
    let maxBodyBytes: Int
    private(set) var framing: BodyFraming = .none
    /// The body has been read to its end (or there is none).
    private(set) var isComplete = true
    /// What a `Content-Length` body still owes.
    private(set) var remaining = 0
    /// Decoded bytes of a chunked body so far.
    private var received = 0
    private var decoder = ChunkedDecoder()

    init(maxBodyBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
    }

    /// A new request's body begins.
    mutating func start(_ framing: BodyFraming) {
        self.framing = framing
        switch framing {
        case .none: isComplete = true; remaining = 0
        case .contentLength(let n): isComplete = n == 0; remaining = n
        case .chunked, .untilClose: isComplete = false; decoder = ChunkedDecoder()
        }
        received = 0
    }

    /// Nothing more of this body will be read (the request is refused).
    mutating func abandon() { isComplete = true }

    /// `Content-Length` when the request declared one, 0 when it has no body, nil for chunked.
    var declaredLength: Int? {
        switch framing {
        case .none: 0
        case .contentLength(let n): n
        case .chunked, .untilClose: nil
        }
    }

    /// Takes what `bytes` (the buffered input) holds of the body. `consumed` bytes belong to it;
    /// `result` is a piece, `.success(nil)` at the end, a failure (then the connection cannot be
    /// reused), or nil when more bytes are needed.
    mutating func take(_ bytes: UnsafeRawBufferPointer) -> (consumed: Int, result: Result<[UInt8]?, HTTPBodyError>?) {
        if isComplete { return (0, .success(nil)) }
        guard !bytes.isEmpty else { return (0, nil) }
        switch framing {
        case .contentLength:
            let n = min(remaining, bytes.count)
            let piece = Array(UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
            remaining -= n
            if remaining == 0 { isComplete = true }
            return (n, .success(piece))
        case .chunked:
            var piece: [UInt8] = []
            let consumed: Int
            do {
                consumed = try decoder.decode(bytes) { data in piece.append(contentsOf: data) }
            } catch {
                return (0, .failure(.malformed("\(error)")))
            }
            if decoder.isComplete { isComplete = true }
            received += piece.count
            if received > maxBodyBytes { return (consumed, .failure(.tooLarge(limit: maxBodyBytes))) }
            if piece.isEmpty { return (consumed, isComplete ? .success(nil) : nil) }
            return (consumed, .success(piece))
        case .none, .untilClose:
            return (0, .success(nil))
        }
    }
}
