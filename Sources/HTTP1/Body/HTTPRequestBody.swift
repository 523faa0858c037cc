/// A request body, read as a stream so that a proxy never holds a whole upload.
///
/// `next()` returns the next piece, or nil at the end. The server reads the socket only while a
/// handler asks for more, which is the back-pressure: a slow consumer stops the client.
/// `Expect: 100-continue` is answered on the first `next()`, so a handler that refuses the request
/// without reading it never invites the body.
public protocol HTTPRequestBody: AnyObject, Sendable {
    /// `Content-Length` when the request declared one, 0 when it has no body, nil for chunked.
    var declaredLength: Int? { get }
    func next() async throws(HTTPBodyError) -> [UInt8]?
}

extension HTTPRequestBody {
    /// Reads the whole body, refusing it once it passes `limit` bytes.
    public func collect(limit: Int) async throws(HTTPBodyError) -> [UInt8] {
        if let declared = declaredLength, declared > limit { throw .tooLarge(limit: limit) }
        var all: [UInt8] = []
        while let piece = try await next() {
            if all.count + piece.count > limit { throw .tooLarge(limit: limit) }
            all.append(contentsOf: piece)
        }
        return all
    }
}
