import GatehouseOIDC
import GatehouseSessions
import Logging
import Synchronization

/// Revokes ended sessions' tokens at their provider (RFC 7009): the refresh token, and the access
/// token too, since some providers (Glewlwyd) keep an access token valid until it expires otherwise.
///
/// Every token of every ended session is revoked — a logout everywhere of a user with hundreds of
/// sessions included — but at most `concurrency` requests at a time, so one logout never opens
/// hundreds of connections to the provider. The caller waits at most `wait` (one provider timeout:
/// what a logout waited before); revocations still queued then go on after the answer.
enum TokenRevocation {
    static let concurrency = 4

    struct Job: Sendable, Equatable {
        let token: String
        let hint: TokenClient.TokenTypeHint
    }

    /// The tokens to revoke, refresh tokens first: they outlive access tokens, so they matter most
    /// when the wait ends before every request is sent.
    static func jobs(for sessions: [Session]) -> [Job] {
        sessions.compactMap { $0.tokens.refreshToken.map { Job(token: $0, hint: .refreshToken) } }
            + sessions.map { Job(token: $0.tokens.accessToken, hint: .accessToken) }.filter { !$0.token.isEmpty }
    }

    /// Revokes every token of `sessions` with `tokens`, waiting at most `wait` for them.
    static func revoke(_ sessions: [Session], with tokens: TokenClient, waitingAtMost wait: Duration,
                       logger: Logger) async {
        let jobs = jobs(for: sessions)
        guard !jobs.isEmpty else { return }
        let failures = Atomic<Int>(0)
        await runBounded(jobs, concurrency: concurrency, waitingAtMost: wait) { job in
            do {
                try await tokens.revoke(token: job.token, tokenTypeHint: job.hint)
            } catch {
                // Once per logout, not once per token: a provider that is down fails them all.
                if failures.add(1, ordering: .relaxed).newValue == 1 {
                    logger.warning("logout: token revocation failed", metadata: [
                        "token.type": "\(job.hint.rawValue)", "error": "\(error)", "tokens": "\(jobs.count)"])
                }
            }
        }
    }

    /// Runs `work` for each job, at most `concurrency` at once, in order; returns when all are
    /// done or `wait` has passed, whichever is first (the rest then go on without a waiter).
    static func runBounded<Item: Sendable>(_ items: [Item], concurrency: Int, waitingAtMost wait: Duration,
                                           _ work: @escaping @Sendable (Item) async -> Void) async {
        let finished = FirstResume()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            finished.arm(continuation)
            let timer = Task {
                try? await Task.sleep(for: wait)
                finished.resume()
            }
            Task {
                await withTaskGroup(of: Void.self) { group in
                    var next = items.makeIterator()
                    for _ in 0..<max(1, concurrency) {
                        guard let item = next.next() else { break }
                        group.addTask { await work(item) }
                    }
                    while await group.next() != nil {
                        if let item = next.next() { group.addTask { await work(item) } }
                    }
                }
                timer.cancel()
                finished.resume()
            }
        }
    }
}

/// A continuation resumed by whichever of two events comes first, once.
private final class FirstResume: Sendable {
    private let slot = Mutex<CheckedContinuation<Void, Never>?>(nil)

    func arm(_ continuation: CheckedContinuation<Void, Never>) {
        slot.withLock { $0 = continuation }
    }

    func resume() {
        slot.withLock { slot -> CheckedContinuation<Void, Never>? in
            defer { slot = nil }
            return slot
        }?.resume()
    }
}
