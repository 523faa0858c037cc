/// A parameter bound to `$n` of a statement: sent with its type, so the server never has to infer
/// one, and in the binary format, so nothing is escaped or cut (libpq reads text-format values up to
/// a NUL byte; in binary a NUL inside text is refused by the server instead of silently truncated).
public enum PostgresValue: Sendable, Equatable {
    case text(String?)
    case int8(Int64?)
    case bytea([UInt8])

    /// `pg_type` OIDs of the parameter types.
    var typeOID: UInt32 {
        switch self {
        case .text: 25
        case .int8: 20
        case .bytea: 17
        }
    }

    /// The binary-format bytes sent, or nil for SQL NULL: UTF-8 for text, 8 big-endian bytes for
    /// bigint, the bytes themselves for bytea.
    var wireBytes: [UInt8]? {
        switch self {
        case .text(let value): value.map { Array($0.utf8) }
        case .int8(let value): value.map { v in (0..<8).reversed().map { UInt8(truncatingIfNeeded: v >> ($0 * 8)) } }
        case .bytea(let bytes): bytes
        }
    }
}

/// One row of a result, read in the binary format the connection asks for: `text` columns as
/// UTF-8, `bigint` as 8 big-endian bytes, `bytea` as raw bytes. Valid only inside the closure that
/// receives it.
public struct PostgresRow {
    let values: [[UInt8]?]

    public func isNull(_ column: Int) -> Bool { values[column] == nil }

    public func string(_ column: Int) -> String? {
        values[column].map { String(decoding: $0, as: UTF8.self) }
    }

    public func requiredString(_ column: Int) throws(PostgresError) -> String {
        guard let value = string(column) else { throw Self.unexpectedNull(column) }
        return value
    }

    public func requiredBytes(_ column: Int) throws(PostgresError) -> [UInt8] {
        guard let value = values[column] else { throw Self.unexpectedNull(column) }
        return value
    }

    /// A `bigint` (or `integer`) column; 0 for NULL.
    public func int64(_ column: Int) -> Int64 {
        guard let bytes = values[column], bytes.count == 8 || bytes.count == 4 else { return 0 }
        var raw: UInt64 = 0
        for byte in bytes { raw = raw << 8 | UInt64(byte) }
        return bytes.count == 8 ? Int64(bitPattern: raw) : Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: raw)))
    }

    private static func unexpectedNull(_ column: Int) -> PostgresError {
        PostgresError(kind: .protocolViolation, message: "column \(column) is NULL where a value was expected", sql: nil)
    }
}
