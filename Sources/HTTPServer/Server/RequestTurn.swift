import HTTP1

/// What a connection knows of the request it is on: made anew when the next request begins
/// (`HTTPConnection.begin`) or a malformed one is refused, so nothing of one request (a HEAD's
/// missing body, an expectation, its trace) can shape the next one's answer or record.
struct RequestTurn {
    var method = "-"
    var version = HTTPVersion.http1_1
    var path: Substring = "-"
    var isHEAD = false
    /// Whether the connection stays open after this answer (the client's wish, unless shutting down).
    var keepAlive = true
    /// The client sent `Expect: 100-continue` (HTTP/1.1), and whether the interim answer went out.
    var expectContinue = false
    var continueSent = false
    /// The loop's clock reading when the request began (its duration in the access record).
    var startTime: UInt64 = 0
    var requestID = RequestID(loop: 0, number: 0)
    /// The request's W3C trace (received or fresh), for the handler and the access log; made where
    /// something reads it.
    var trace: TraceParent?
    /// What the handler said the request is (`RequestConnection.categorize`), for its record.
    var category: Int?
    var status = 0
    var bytesSent = 0
    var responseStarted = false
    /// Why reading the request's body failed, once it has.
    var bodyFailed: HTTPBodyError?
}
