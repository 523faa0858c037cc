/// The statements of one transaction on a pooled connection (see
/// `PostgresConnectionPool.withTransaction`). Each statement waits for its answer at most
/// `answerWithin` (the statement timeout plus a margin).
public struct PostgresTransaction {
    let connection: PostgresConnection
    let answerWithin: Duration

    /// Runs a statement; returns the rows it affected (or returned).
    @discardableResult
    public func run(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> Int {
        try connection.execute(sql, parameters, deadline: .now + answerWithin)
    }

    /// Runs a query and maps every row.
    public func query<R>(_ sql: String, _ parameters: [PostgresValue] = [],
                         row map: (PostgresRow) throws(PostgresError) -> R) throws(PostgresError) -> [R] {
        var results: [R] = []
        try connection.execute(sql, parameters, deadline: .now + answerWithin) { (row: PostgresRow) throws(PostgresError) in
            results.append(try map(row))
        }
        return results
    }

    /// The first row of a query, mapped, or nil when it returns none.
    public func queryFirst<R>(_ sql: String, _ parameters: [PostgresValue] = [],
                              row map: (PostgresRow) throws(PostgresError) -> R) throws(PostgresError) -> R? {
        try query(sql, parameters, row: map).first
    }

    /// Runs parameterless statements through the simple protocol (a migration file); `label` names
    /// them in errors instead of the whole text.
    func executeScript(_ sql: String, label: String) throws(PostgresError) {
        try connection.executeScript(sql, deadline: .now + answerWithin, label: label)
    }

    /// `BEGIN` plus the timeouts, all `SET LOCAL`: they end with the transaction, so nothing is left
    /// on a server connection that PgBouncer hands to another client next.
    func begin(statementTimeout: Duration) throws(PostgresError) {
        let millis = max(1, statementTimeout.components.seconds * 1_000
                         + statementTimeout.components.attoseconds / 1_000_000_000_000_000)
        try connection.executeScript("""
            BEGIN; SET LOCAL statement_timeout = \(millis); \
            SET LOCAL idle_in_transaction_session_timeout = \(millis * 2)
            """, deadline: .now + answerWithin, label: "BEGIN")
    }
}
