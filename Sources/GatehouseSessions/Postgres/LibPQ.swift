import CLibPQ
import Glibc

/// libpq's functions, loaded from `libpq.so.5` when the PostgreSQL engine opens its first
/// connection: a gateway whose sessions live in SQLite never maps libpq, nor Kerberos, LDAP, SASL
/// and GnuTLS behind it (about 3 MiB of resident pages).
///
/// The table is kept here, in one Swift global, and not as a static of the C header: each object
/// file that calls a header's static inline function gets a copy of its statics, and in a release
/// build the optimiser folded the copies nothing wrote to into null pointers — `PQstatus` then
/// "failed" and `PQfinish` did nothing, so the pool opened a new connection per transaction and
/// never closed one, until PostgreSQL refused clients (fixed in 5c3b2b5; bench/RESULTS.md, the entry of 33f83a9).
final class LibPQ: @unchecked Sendable {
    /// The functions, every one present (`load` refuses a library that lacks one).
    let call: gatehouse_pq_functions

    private init(_ call: gatehouse_pq_functions) { self.call = call }

    /// libpq, loaded at most once per process (a failure is kept: the library does not appear later).
    static let shared: Result<LibPQ, PostgresError> = load()

    private static func load() -> Result<LibPQ, PostgresError> {
        guard let library = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "unknown error"
            return .failure(.unavailable("libpq.so.5 could not be loaded (install libpq5): \(why)"))
        }
        var call = gatehouse_pq_functions()
        var missing: [String] = []
        func bind<Function>(_ name: String, _ slot: inout Function?) {
            guard let symbol = dlsym(library, name) else { return missing.append(name) }
            slot = unsafeBitCast(symbol, to: Function.self)
        }
        bind("PQconnectdbParams", &call.connectdbParams)
        bind("PQstatus", &call.status)
        bind("PQerrorMessage", &call.errorMessage)
        bind("PQfinish", &call.finish)
        bind("PQsetNoticeProcessor", &call.setNoticeProcessor)
        bind("PQtransactionStatus", &call.transactionStatus)
        bind("PQsocket", &call.socket)
        bind("PQsendQueryParams", &call.sendQueryParams)
        bind("PQsendQuery", &call.sendQuery)
        bind("PQconsumeInput", &call.consumeInput)
        bind("PQisBusy", &call.isBusy)
        bind("PQgetResult", &call.getResult)
        bind("PQresultStatus", &call.resultStatus)
        bind("PQresultErrorMessage", &call.resultErrorMessage)
        bind("PQresultErrorField", &call.resultErrorField)
        bind("PQntuples", &call.ntuples)
        bind("PQnfields", &call.nfields)
        bind("PQgetvalue", &call.getvalue)
        bind("PQgetlength", &call.getlength)
        bind("PQgetisnull", &call.getisnull)
        bind("PQcmdTuples", &call.cmdTuples)
        bind("PQclear", &call.clear)
        bind("PQnotifies", &call.notifies)
        bind("PQfreemem", &call.freemem)
        guard missing.isEmpty else {
            return .failure(.unavailable("libpq.so.5 lacks \(missing.joined(separator: ", "))"))
        }
        return .success(LibPQ(call))
    }
}
