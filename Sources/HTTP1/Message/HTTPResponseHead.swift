/// Status line and headers of a response.
public struct HTTPResponseHead: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.headers = headers
    }
}
