/// One header field as it arrived: the name keeps its original spelling, lookups ignore ASCII case.
public struct HTTPField: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
