/// A request's number on its event loop, written `LOOP-HEXNUMBER` (e.g. `1-2f`). Numbers, not a
/// string: it is formatted only when something logs it, not for every request.
public struct RequestID: Sendable, Equatable, CustomStringConvertible {
    public var loop: Int
    public var number: UInt64

    /// For a request that no connection numbered (one built by a test or a handler).
    public static let unassigned = RequestID(loop: 0, number: 0)

    public var description: String { "\(loop)-\(String(number, radix: 16))" }
}
