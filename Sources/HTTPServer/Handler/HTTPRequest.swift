import EventLoops
import HTTP1

/// One request as a handler sees it.
public struct HTTPRequest: Sendable {
    public var head: HTTPRequestHead
    public var body: any HTTPRequestBody
    public var peer: PeerAddress
    /// Short id for correlating the access log with handler logs (never derived from secrets).
    public var id: RequestID
    /// The W3C trace context: the client's valid `traceparent`, or a fresh one (the access log
    /// carries its trace id; the proxy sends it upstream).
    public var trace: TraceParent

    /// - Parameter trace: nil takes the trace from `head`'s headers (or starts a fresh one).
    public init(head: HTTPRequestHead, body: any HTTPRequestBody = BufferedRequestBody([]),
                peer: PeerAddress = PeerAddress(ip: "127.0.0.1", port: 0), id: RequestID = RequestID(loop: 0, number: 0),
                trace: TraceParent? = nil) {
        self.head = head
        self.body = body
        self.peer = peer
        self.id = id
        self.trace = trace ?? TraceParent.continuing(head.headers)
    }
}
