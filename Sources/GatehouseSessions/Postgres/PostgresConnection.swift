import CLibPQ
import Glibc

/// One libpq connection. Every statement is sent with `PQsendQueryParams` (the unnamed statement of
/// the extended protocol: no named prepared statement outlives it, which PgBouncer's transaction
/// mode requires) and its answer awaited with `poll(2)` against a deadline, so a server that stops
/// answering costs at most the deadline, never a hung thread.
///
/// Not thread-safe: `PostgresConnectionPool` lends it to one caller at a time, which is why it may
/// cross threads (`@unchecked Sendable`).
final class PostgresConnection: @unchecked Sendable {
    private var handle: OpaquePointer?
    /// libpq's functions (`LibPQ`).
    private let pq: gatehouse_pq_functions
    /// Removes the URI's passwords from libpq's messages.
    private let scrub: @Sendable (String) -> String

    /// Connects (blocking, bounded by `connect_timeout`).
    ///
    /// - Parameters:
    ///   - uri: the libpq URI, handed to libpq as it is (so `PG*` variables and the passfile apply
    ///     as libpq defines them); connection defaults are given before it, so the URI overrides them.
    ///   - defaults: `connect_timeout`, `application_name`…: used unless the URI or a `PG*` variable sets them.
    init(uri: String, defaults: [(String, String)], scrub: @escaping @Sendable (String) -> String) throws(PostgresError) {
        self.scrub = scrub
        // libpq is loaded with the first connection (`LibPQ`): a gateway on SQLite never maps it.
        pq = try LibPQ.shared.get().call
        let pairs = defaults + [("dbname", uri)]
        let keywords = pairs.map { strdup($0.0) } + [nil]
        let values = pairs.map { strdup($0.1) } + [nil]
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let connection = keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keys in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { vals in
                pq.connectdbParams!(keys.baseAddress, vals.baseAddress, 1)
            }
        }
        guard let connection else { throw .unavailable("out of memory opening a connection") }
        guard pq.status!(connection) == CONNECTION_OK else {
            let message = scrub(Self.trimmed(pq.errorMessage!(connection)))
            pq.finish!(connection)
            throw .unavailable(message.isEmpty ? "cannot connect" : message)
        }
        // Notices (`relation … already exists, skipping`) would go to stderr unformatted: drop them.
        _ = pq.setNoticeProcessor!(connection, { _, _ in }, nil)
        handle = connection
    }

    deinit {
        if let handle { pq.finish!(handle) }
    }

    /// False once the connection broke (server gone, deadline passed): the pool discards it.
    var isUsable: Bool {
        guard let handle else { return false }
        return pq.status!(handle) == CONNECTION_OK
    }

    /// True while a transaction is open or failed on the server.
    var isInTransaction: Bool {
        guard let handle else { return false }
        let status = pq.transactionStatus!(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Runs one or more parameterless statements (the simple protocol), e.g. `BEGIN; SET LOCAL …`
    /// or a migration file. Fails with the first error.
    func executeScript(_ sql: String, deadline: ContinuousClock.Instant, label: String? = nil) throws(PostgresError) {
        let handle = try openHandle(sql: label ?? sql)
        guard pq.sendQuery!(handle, sql) == 1 else { throw sendFailure(handle, sql: label ?? sql) }
        _ = try collect(handle, sql: label ?? sql, deadline: deadline) { _ in }
    }

    /// Runs one statement with parameters; calls `row` for each result row.
    /// - Returns: the number of rows the statement affected or returned.
    @discardableResult
    func execute(_ sql: String, _ parameters: [PostgresValue], deadline: ContinuousClock.Instant,
                 rows: (PostgresRow) throws(PostgresError) -> Void = { _ in }) throws(PostgresError) -> Int {
        let handle = try openHandle(sql: sql)
        let types = parameters.map(\.typeOID)
        let formats = [Int32](repeating: 1, count: parameters.count)
        let buffers: [[UInt8]?] = parameters.map(\.wireBytes)
        let lengths = buffers.map { Int32($0?.count ?? 0) }
        // libpq copies the parameters while sending, so the pointers need only live for the call.
        let sent: Int32 = withPointers(to: buffers) { pointers in
            pq.sendQueryParams!(handle, sql, Int32(parameters.count), types, pointers, lengths, formats, 1)
        }
        guard sent == 1 else { throw sendFailure(handle, sql: sql) }
        return try collect(handle, sql: sql, deadline: deadline, rows: rows)
    }

    /// The payloads of the notifications (`LISTEN`) that arrive within `timeoutMilliseconds`; empty
    /// when none came. Throws when the connection broke.
    func awaitNotifications(timeoutMilliseconds: Int32) throws(PostgresError) -> [String] {
        guard let handle else { throw .unavailable("the connection is closed") }
        var payloads = drainNotifications(handle)
        guard payloads.isEmpty else { return payloads }
        var descriptor = pollfd(fd: pq.socket!(handle), events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, timeoutMilliseconds)
        if ready < 0, errno != EINTR { throw .unavailable("poll failed (errno \(errno))") }
        guard ready > 0 else { return [] }
        guard pq.consumeInput!(handle) == 1, pq.status!(handle) == CONNECTION_OK else {
            throw .unavailable(scrub(Self.trimmed(pq.errorMessage!(handle))))
        }
        payloads = drainNotifications(handle)
        return payloads
    }

    private func drainNotifications(_ handle: OpaquePointer) -> [String] {
        var payloads: [String] = []
        while let notification = pq.notifies!(handle) {
            payloads.append(notification.pointee.extra.map { String(cString: $0) } ?? "")
            pq.freemem!(notification)
        }
        return payloads
    }

    /// Closes the socket now (after a deadline passed the connection's state is unknown).
    func close() {
        if let handle { pq.finish!(handle) }
        handle = nil
    }

    // MARK: - Waiting for results

    private func openHandle(sql: String) throws(PostgresError) -> OpaquePointer {
        guard let handle, pq.status!(handle) == CONNECTION_OK else {
            throw .unavailable("the connection to PostgreSQL is closed", sql: sql)
        }
        return handle
    }

    /// Reads every result of the statement(s) sent, up to `deadline`; returns the affected or
    /// returned row count of the last one, throwing the first error after draining the rest.
    private func collect(_ handle: OpaquePointer, sql: String, deadline: ContinuousClock.Instant,
                         rows: (PostgresRow) throws(PostgresError) -> Void) throws(PostgresError) -> Int {
        var failure: PostgresError?
        var count = 0
        while true {
            try awaitResult(handle, sql: sql, deadline: deadline)
            guard let result = pq.getResult!(handle) else { break }
            defer { pq.clear!(result) }
            switch pq.resultStatus!(result) {
            case PGRES_COMMAND_OK:
                count = pq.cmdTuples!(result).flatMap { Int(String(cString: $0)) } ?? 0
            case PGRES_TUPLES_OK:
                let rowCount = Int(pq.ntuples!(result))
                count = rowCount
                guard failure == nil else { continue }
                let columns = Int(pq.nfields!(result))
                for r in 0..<Int32(rowCount) {
                    var values: [[UInt8]?] = []
                    values.reserveCapacity(columns)
                    for c in 0..<Int32(columns) {
                        if pq.getisnull!(result, r, c) == 1 {
                            values.append(nil)
                        } else {
                            let length = Int(pq.getlength!(result, r, c))
                            let start = UnsafeRawPointer(pq.getvalue!(result, r, c)!)
                            values.append(Array(UnsafeRawBufferPointer(start: start, count: length)))
                        }
                    }
                    do { try rows(PostgresRow(values: values)) } catch { failure = failure ?? error }
                }
            case PGRES_EMPTY_QUERY:
                continue
            default:
                failure = failure ?? resultError(result, handle, sql: sql)
            }
        }
        if let failure { throw failure }
        return count
    }

    /// Waits until libpq holds a complete result (or the end of results) without blocking past `deadline`.
    private func awaitResult(_ handle: OpaquePointer, sql: String, deadline: ContinuousClock.Instant) throws(PostgresError) {
        while pq.isBusy!(handle) == 1 {
            let remaining = deadline - .now
            guard remaining > .zero else {
                // The server may still be running it: drop the connection (its statement_timeout ends
                // the statement server-side) rather than reuse a socket in an unknown state.
                close()
                throw .unavailable("no answer before the deadline", sql: sql)
            }
            let millis = max(1, Int32(clamping: remaining.components.seconds * 1_000
                                        + remaining.components.attoseconds / 1_000_000_000_000_000))
            var descriptor = pollfd(fd: pq.socket!(handle), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, millis)
            if ready < 0 && errno != EINTR {
                close()
                throw .unavailable("poll failed (errno \(errno))", sql: sql)
            }
            if ready > 0 && pq.consumeInput!(handle) == 0 {
                let message = scrub(Self.trimmed(pq.errorMessage!(handle)))
                close()
                throw .unavailable(message.isEmpty ? "connection lost" : message, sql: sql)
            }
        }
    }

    private func sendFailure(_ handle: OpaquePointer, sql: String) -> PostgresError {
        let message = scrub(Self.trimmed(pq.errorMessage!(handle)))
        let broken = pq.status!(handle) != CONNECTION_OK
        if broken { close() }
        return PostgresError(kind: broken ? .unavailable : .protocolViolation,
                             message: message.isEmpty ? "cannot send the statement" : message, sql: sql)
    }

    private func resultError(_ result: OpaquePointer, _ handle: OpaquePointer, sql: String) -> PostgresError {
        if let state = pq.resultErrorField!(result, Int32(UInt8(ascii: "C"))) {
            // The primary message only: DETAIL quotes key values (e.g. the duplicate id hash).
            let primary = pq.resultErrorField!(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? ""
            return PostgresError(kind: .server(sqlState: String(cString: state)), message: scrub(primary), sql: sql)
        }
        // No SQLSTATE: libpq's own error, typically the connection breaking mid-result.
        let message = scrub(Self.trimmed(pq.resultErrorMessage!(result)))
        let broken = pq.status!(handle) != CONNECTION_OK
        return PostgresError(kind: broken ? .unavailable : .protocolViolation,
                             message: message.isEmpty ? "unexpected result" : message, sql: sql)
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "" }
        let text = String(cString: message)
        // libpq ends messages with a newline and may span several lines: keep one line per message.
        return text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingPrefix(while: \.isWhitespace) }
            .filter { !$0.isEmpty }
            .joined(separator: "; ")
    }
}

/// Calls `body` with C pointers to each buffer (nil for NULL), valid during the call.
private func withPointers<R>(to buffers: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    var pointers: [UnsafePointer<CChar>?] = []
    func recurse(_ index: Int) -> R {
        guard index < buffers.count else { return body(pointers) }
        guard let buffer = buffers[index] else {
            pointers.append(nil)
            return recurse(index + 1)
        }
        // A zero-length value still needs a non-nil pointer (nil means NULL).
        let bytes = buffer.isEmpty ? [0] : buffer
        return bytes.withUnsafeBufferPointer { raw in
            raw.baseAddress!.withMemoryRebound(to: CChar.self, capacity: raw.count) { pointer in
                pointers.append(pointer)
                return recurse(index + 1)
            }
        }
    }
    return recurse(0)
}
