import HTTP1

/// Why an upstream exchange failed. `connect*` and `firstByteTimeout` mean the upstream never
/// answered (the gateway says 502/504); the rest happen mid-exchange.
public enum UpstreamError: Error, Equatable, Sendable, CustomStringConvertible {
    case connectFailed(String)
    case connectTimeout
    case firstByteTimeout
    case bodyTimeout
    case invalidResponse(String)
    case connectionClosed
    case requestBody(HTTPBodyError)
    /// The request cannot be expressed to the upstream.
    case invalidRequest(String)

    public var description: String {
        switch self {
        case .connectFailed(let why): "connect failed: \(why)"
        case .connectTimeout: "connect timed out"
        case .firstByteTimeout: "no response in time"
        case .bodyTimeout: "response body stalled"
        case .invalidResponse(let why): "invalid response: \(why)"
        case .connectionClosed: "upstream closed the connection"
        case .requestBody(let error): "request body: \(error)"
        case .invalidRequest(let why): "invalid request: \(why)"
        }
    }
}
