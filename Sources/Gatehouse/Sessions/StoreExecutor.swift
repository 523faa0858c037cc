import EventLoops
import GatehouseSessions
import HTTP1
import Synchronization

/// Runs session-store calls on a few threads of their own, so that no event loop ever waits on a
/// database: a SQLite write lock held by another process (an admin command, a large purge, a slow
/// fsync) or a PostgreSQL that does not answer delays only the requests that need the store, never
/// the static files and cached API calls served by the same loop.
///
/// Engine-agnostic: the store's calls stay synchronous and are simply moved here. The caller awaits
/// and resumes on its own executor (a request's task prefers its connection's loop).
///
/// Bounded twice: the queue holds at most `queueLimit` calls (more → `SessionStoreError.overloaded`
/// at once), and a caller waits at most `timeout` (→ `SessionStoreError.timedOut`), whether its call
/// is still queued (it is then skipped) or running (a blocking engine call cannot be interrupted,
/// but its own limits — SQLite's busy timeout, PostgreSQL's statement timeout — end it, and a write
/// whose caller was already answered rolls back instead of committing: `StoreCommitGate`, each call's
/// `PendingStoreCall` its permit).
public final class StoreExecutor: Sendable {
    public static let standardThreads = 4
    public static let standardQueueLimit = 4_096
    public static let standardTimeout: Duration = .seconds(10)

    public let timeout: Duration
    private let jobs: StoreJobQueue
    private let watchdog: StoreDeadlines

    public init(threads: Int = StoreExecutor.standardThreads, queueLimit: Int = StoreExecutor.standardQueueLimit,
                timeout: Duration = StoreExecutor.standardTimeout) {
        self.timeout = timeout
        jobs = StoreJobQueue(limit: max(1, queueLimit))
        watchdog = StoreDeadlines()
        for index in 0..<max(1, threads) {
            let jobs = self.jobs
            DetachedThread.start(name: "gatehouse-store-\(index)") { while let job = jobs.next() { job() } }
        }
        let watchdog = self.watchdog
        DetachedThread.start(name: "gatehouse-store-deadlines") { watchdog.run() }
    }

    /// The threads end once the calls already queued have run.
    deinit {
        jobs.stop()
        watchdog.stop()
    }

    /// Runs `body` on a store thread and returns its result, or throws `timedOut` once `timeout`
    /// has passed, or `overloaded` when the queue is full.
    public func run<Value: Sendable>(
        _ body: @escaping @Sendable () throws(SessionStoreError) -> Value
    ) async throws(SessionStoreError) -> Value {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        // The request's trace goes with the call to the store thread: its operation is that span's child.
        let trace = TraceContext.current
        let result: Result<Value, SessionStoreError> = await withUnsafeContinuation { continuation in
            let pending = PendingStoreCall(continuation)
            let accepted = jobs.submit {
                guard !pending.isFinished else { return }  // timed out while queued
                pending.finish(StoreCommitGate.$permit.withValue(pending) {
                    guard let trace else { return Result(catching: body) }
                    return TraceContext.$current.withValue(trace) { Result(catching: body) }
                })
            }
            guard accepted else {
                pending.finish(.failure(.overloaded(queued: jobs.limit)))
                return
            }
            watchdog.add(deadline: EventLoop.monotonicNow() + UInt64(seconds * 1e9)) {
                pending.timeOut(.failure(.timedOut(seconds: seconds)))
            }
        }
        return try result.get()
    }

    /// Runs `body` on a store thread without waiting for it (a write nobody needs the answer of).
    /// Dropped when the queue is full.
    public func submit(_ body: @escaping @Sendable () -> Void) {
        _ = jobs.submit(body)
    }
}

/// A FIFO over an array that pops from a moving head (no shifting per pop).
struct StoreFIFO<Element> {
    private var items: [Element] = []
    private var head = 0

    var count: Int { items.count - head }
    var first: Element? { head < items.count ? items[head] : nil }

    mutating func append(_ element: Element) { items.append(element) }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let element = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1_024 {
            items.removeFirst(head)
            head = 0
        }
        return element
    }
}

/// One awaited call: its continuation is resumed exactly once, by the worker or by the watchdog —
/// never by the watchdog once the call's write has been allowed to commit (its caller then gets the
/// committed result, a little late, instead of a `503` for something that happened).
private final class PendingStoreCall<Value: Sendable>: StoreCommitPermit {
    private struct State {
        var continuation: UnsafeContinuation<Result<Value, SessionStoreError>, Never>?
        var committing = false
    }

    private let state: Mutex<State>

    init(_ continuation: UnsafeContinuation<Result<Value, SessionStoreError>, Never>) {
        state = Mutex(State(continuation: continuation))
    }

    var isFinished: Bool { state.withLock { $0.continuation == nil } }

    func mayCommit() -> Bool {
        state.withLock { state in
            guard state.continuation != nil else { return false }
            state.committing = true
            return true
        }
    }

    /// The worker's result.
    func finish(_ result: Result<Value, SessionStoreError>) {
        take()?.resume(returning: result)
    }

    /// The watchdog's: ignored once a commit was allowed.
    func timeOut(_ result: Result<Value, SessionStoreError>) {
        state.withLock { state in state.committing ? nil : state.continuation.take() }?.resume(returning: result)
    }

    private func take() -> UnsafeContinuation<Result<Value, SessionStoreError>, Never>? {
        state.withLock { $0.continuation.take() }
    }
}

/// The bounded FIFO the store threads take their calls from.
final class StoreJobQueue: @unchecked Sendable {
    typealias Job = @Sendable () -> Void
    let limit: Int
    private let condition = ThreadCondition()
    // Guarded by `condition`.
    private var jobs = StoreFIFO<Job>()
    private var stopped = false

    init(limit: Int) {
        self.limit = limit
    }

    /// False when the queue is full or stopped.
    func submit(_ job: @escaping Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped, jobs.count < limit else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// The next call, waiting for one; nil once stopped and drained.
    func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let job = jobs.popFirst() { return job }
            if stopped { return nil }
            condition.wait()
        }
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }
}

/// Fires each call's timeout. Every call has the same timeout, so deadlines arrive in submission
/// order and a FIFO suffices (no heap); a call that finished in time makes its timeout a no-op.
final class StoreDeadlines: @unchecked Sendable {
    typealias Expiry = @Sendable () -> Void
    private let condition = ThreadCondition()
    // Guarded by `condition`.
    private var entries = StoreFIFO<(deadline: UInt64, expire: Expiry)>()
    private var stopped = false

    func add(deadline: UInt64, _ expire: @escaping Expiry) {
        condition.lock()
        entries.append((deadline, expire))
        if entries.count == 1 { condition.signal() }
        condition.unlock()
    }

    func run() {
        condition.lock()
        while !stopped {
            guard let first = entries.first else {
                condition.wait()
                continue
            }
            let now = EventLoop.monotonicNow()
            if first.deadline > now {
                condition.wait(untilMonotonic: first.deadline)
                continue
            }
            _ = entries.popFirst()
            condition.unlock()
            first.expire()
            condition.lock()
        }
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }
}
