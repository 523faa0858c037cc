extension SQLiteDatabase {
    /// Runs `body` on the connection (autocommit), reporting failures as `SessionStoreError`.
    @discardableResult
    func storeRead<R: Sendable>(_ body: (SQLiteConnection) throws(SQLiteError) -> R) throws(SessionStoreError) -> R {
        do {
            return try withConnection(body)
        } catch {
            throw .database(error)
        }
    }

    /// Writes in a `BEGIN IMMEDIATE` transaction, so the busy timeout covers waiting for other
    /// connections and a multi-statement write is all-or-nothing.
    @discardableResult
    func storeWrite<R: Sendable>(_ body: (SQLiteConnection) throws(SQLiteError) -> R) throws(SessionStoreError) -> R {
        do {
            return try transaction(immediate: true, body)
        } catch {
            throw .database(error)
        }
    }
}
