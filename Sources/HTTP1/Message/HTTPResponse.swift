/// A complete response, sent in one write (head and body together, so a small answer never waits on
/// Nagle/delayed-ACK).
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: String) {
        self.init(status: status, headers: headers, body: Array(body.utf8))
    }

    public var head: HTTPResponseHead { HTTPResponseHead(status: status, headers: headers) }
}
