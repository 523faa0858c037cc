/// Why a response could not be written.
public enum HTTPWriteError: Error, Equatable, Sendable {
    /// The client closed the connection (or the server is forcing it shut).
    case connectionClosed
    /// The call does not fit the response's state (e.g. body before head).
    case invalidState(String)
}
