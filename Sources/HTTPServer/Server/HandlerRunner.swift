import EventLoops
import HTTP1

/// The one task that runs the handler for a connection's requests, one request after another.
///
/// It is created for the first request of a connection that needs the handler and lives as long as
/// the connection: creating a task per request (its allocation, the first slab of its async stack,
/// its executor-preference record) cost about a tenth of the proxy's CPU. HTTP/1.1 answers requests
/// in order anyway, so a connection never needs two handler runs at once.
///
/// Confined to the connection's event loop: `submit` and `close` are called there, and the task's
/// awaits resume there (its executor preference is that loop).
final class HandlerRunner: @unchecked Sendable {
    /// A struct, not a tuple: a tuple of a request and an exchange was copied and destroyed through
    /// the runtime's generic tuple witnesses (about 750 instructions per request).
    struct Work {
        let request: HTTPRequest
        let exchange: Exchange
        let run: HandlerWork
    }

    private var waiter: UnsafeContinuation<Work?, Never>?
    /// The request handed over while the task was still busy (its handler answered but has not
    /// returned yet). One slot, not a queue, so client input can never make it grow: the connection
    /// starts its next request only once the previous answer is complete, and that request's answer
    /// can only come from its own handler run, which this slot is waiting for. So the connection
    /// hands over nothing more until the task has taken this one (it reads and parses nothing
    /// meanwhile: its state is `.handling`, and the client's further requests stay in the socket).
    private var pending: Work?
    private var closed = false

    /// Starts the task on `loop`; it then waits for work.
    static func start(on loop: EventLoop) -> HandlerRunner {
        let runner = HandlerRunner()
        Task(executorPreference: loop) { await runner.run() }
        return runner
    }

    /// The task's loop, in a function that runs on its caller's executor (`nonisolated(nonsending)`,
    /// the package's default): written in the task's closure, which runs on the generic executor,
    /// every await in it was followed by a switch back to that executor, each a look-up of the
    /// task's executor preference under its status lock (two per request).
    private func run() async {
        while let work = await next() {
            if work.request.trace.recordsSpans {
                // What the handler calls for this request (a provider, the store) is its span's child.
                await TraceContext.$current.withValue(work.request.trace) { await work.run(work.request, work.exchange) }
            } else {
                await work.run(work.request, work.exchange)
            }
            if !work.exchange.handlerReturnedImmediately() { await work.exchange.handlerReturned() }
        }
    }

    /// Hands the next request to the task (it runs once the previous handler run has returned).
    func submit(_ request: consuming HTTPRequest, _ exchange: Exchange, _ run: @escaping HandlerWork) {
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: Work(request: request, exchange: exchange, run: run))
        } else {
            assert(pending == nil, "a second request handed over before the first one's handler ran")
            pending = Work(request: request, exchange: exchange, run: run)
        }
    }

    /// The connection is gone: the task ends after the run in progress, if any.
    func close() {
        closed = true
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: nil)
        }
    }

    private func next() async -> Work? {
        if let work = pending {
            pending = nil
            return work
        }
        if closed { return nil }
        // No hops around the suspension (see `UpstreamConnection.wait`): called and resumed on the loop.
        return await _unsafeInheritExecutor_withUnsafeContinuation { waiter = $0 }
    }
}
