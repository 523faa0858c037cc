/// A value the shared store binds to a statement's `?N`, in the terms both engines share: text,
/// a 64-bit integer (either may be NULL) and bytes. Each engine binds it as its own type.
public enum SessionValue: Sendable, Equatable {
    case text(String?)
    case integer(Int64?)
    case bytes([UInt8])

    /// The value as an engine's parameter, made by that engine's constructor for its kind.
    public func bound<Parameter>(text: (String?) -> Parameter, integer: (Int64?) -> Parameter,
                                 bytes: ([UInt8]) -> Parameter) -> Parameter {
        switch self {
        case .text(let value): text(value)
        case .integer(let value): integer(value)
        case .bytes(let value): bytes(value)
        }
    }
}

/// An engine's parameter type (`SQLiteValue`, `PostgresValue`), made from a `SessionValue`.
public protocol SessionParameter {
    init(_ value: SessionValue)
}
