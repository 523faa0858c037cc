import Foundation

/// Runs blocking work (a child process, a blocking read) on a thread of its own and awaits it.
///
/// Not on the cooperative pool: it has one thread per core, and a test that blocks one of two
/// threads for seconds (a child test run, `openssl` making a key) stalls every other test's tasks in
/// the process, so their servers' own timeouts fire (408s, reset connections) in a parallel run.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.start()
    }
}
