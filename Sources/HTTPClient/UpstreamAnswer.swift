import HTTP1

/// An upstream's answer whose head has arrived, as any `UpstreamTransport` returns it.
public protocol UpstreamAnswer: UpstreamBody {
    var head: HTTPResponseHead { get }
    /// How the body is delimited and what length the browser is told (`UpstreamResponseFraming`).
    var framing: UpstreamResponseFraming { get }
    /// The complete body when it has already arrived (the answer is then done), else nil and
    /// nothing is consumed: read it with `nextBodyPiece()`.
    func wholeBodyIfBuffered() -> [UInt8]?
}

extension UpstreamResponse: UpstreamAnswer {}
