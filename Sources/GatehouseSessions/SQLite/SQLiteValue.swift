/// A value bound to a statement parameter (`?`). Mirrors SQLite's storage classes.
public enum SQLiteValue: Sendable, Equatable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case null
}

extension SQLiteValue {
    /// `.text(value)`, or `.null` when the value is nil.
    public static func optionalText(_ value: String?) -> SQLiteValue {
        value.map(SQLiteValue.text) ?? .null
    }

    /// `.integer(value)`, or `.null` when the value is nil.
    public static func optionalInteger(_ value: Int64?) -> SQLiteValue {
        value.map(SQLiteValue.integer) ?? .null
    }
}
