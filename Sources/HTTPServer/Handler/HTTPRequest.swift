import EventLoops
import HTTP1

/// One request as a handler sees it.
public struct HTTPRequest: Sendable {
    public var head: HTTPRequestHead
    public var body: any HTTPRequestBody
    public var peer: PeerAddress
    /// Short id for correlating the access log with handler logs (never derived from secrets).
    public var id: RequestID

    public init(head: HTTPRequestHead, body: any HTTPRequestBody = BufferedRequestBody([]),
                peer: PeerAddress = PeerAddress(ip: "127.0.0.1", port: 0), id: RequestID = RequestID(loop: 0, number: 0)) {
        self.head = head
        self.body = body
        self.peer = peer
        self.id = id
    }
}
