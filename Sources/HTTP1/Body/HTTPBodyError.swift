/// Why a request body could not be read.
public enum HTTPBodyError: Error, Equatable, Sendable {
    /// The body is larger than the limit the handler asked for (answer `413`).
    case tooLarge(limit: Int)
    /// Chunked framing was broken (answer `400`, the connection closes).
    case malformed(String)
    /// The client went away or the connection ended before the body did.
    case connectionClosed
}
