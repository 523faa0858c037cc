/// A body that is already in memory (tests, fast paths).
public final class BufferedRequestBody: HTTPRequestBody, @unchecked Sendable {
    private var remaining: [UInt8]?
    public let declaredLength: Int?

    public init(_ bytes: [UInt8]) {
        remaining = bytes.isEmpty ? nil : bytes
        declaredLength = bytes.count
    }

    public func next() async throws(HTTPBodyError) -> [UInt8]? {
        defer { remaining = nil }
        return remaining
    }
}
