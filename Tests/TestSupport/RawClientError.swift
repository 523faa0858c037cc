/// What a test client failed at. Tests report it through `#expect(throws:)` or let it fail the test.
public struct RawClientError: Error, CustomStringConvertible {
    public var what: String
    public var errno: Int32 = 0

    public init(what: String, errno: Int32 = 0) {
        self.what = what
        self.errno = errno
    }

    public var description: String { errno == 0 ? what : "\(what) (errno \(errno))" }
}
