import HTTP1

/// An upstream's answer whose head has arrived, as any `UpstreamTransport` returns it.
public protocol UpstreamAnswer: UpstreamBody {
    var head: HTTPResponseHead { get }
    /// How the body is delimited and what length the browser is told (`UpstreamResponseFraming`).
    var framing: UpstreamResponseFraming { get }
    /// The complete body when it has already arrived (the answer is then done), else nil and
    /// nothing is consumed: read it with `nextBodyPiece()`.
    func wholeBodyIfBuffered() -> [UInt8]?
    /// An object kept with the connection the answer came on (`UpstreamResponse.connectionMemo`),
    /// made by `make` the first time; nil when the answer has no such connection.
    func connectionMemo<Memo: AnyObject>(_ make: () -> Memo) -> Memo?
}

extension UpstreamAnswer {
    public func connectionMemo<Memo: AnyObject>(_ make: () -> Memo) -> Memo? { nil }
}

extension UpstreamResponse: UpstreamAnswer {}
