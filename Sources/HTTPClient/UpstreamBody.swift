/// A response body arriving from an upstream, read piece by piece (`UpstreamResponse`, or a
/// test's fake), so the proxy relays every answer with the same loop.
public protocol UpstreamBody: Sendable {
    /// The next piece; nil at the end of the body.
    func nextBodyPiece() async throws(UpstreamError) -> [UInt8]?
    /// Gives the body up (the browser went away): the connection is not reused for it.
    func discard()
}
