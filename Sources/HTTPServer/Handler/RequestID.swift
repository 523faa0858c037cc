/// A request's number on its event loop, written `LOOP-HEXNUMBER` (e.g. `1-2f`). Numbers, not a
/// string: it is formatted only when something logs it, not for every request.
public struct RequestID: Sendable, Equatable, CustomStringConvertible {
    public var loop: Int
    public var number: UInt64

    public init(loop: Int, number: UInt64) {
        (self.loop, self.number) = (loop, number)
    }

    public var description: String { "\(loop)-\(String(number, radix: 16))" }
}
