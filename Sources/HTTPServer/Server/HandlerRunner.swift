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
    typealias Work = (request: HTTPRequest, exchange: Exchange)

    private var waiter: UnsafeContinuation<Work?, Never>?
    /// Requests handed over while the task was busy, in order. A connection hands over its next
    /// request only once the previous answer is complete, so this holds one at most; it is a queue
    /// so that nothing could ever be dropped if that changed.
    private var pending: [Work] = []
    private var closed = false

    /// Starts the task on `loop`; it then waits for work.
    static func start(on loop: EventLoop, handler: any HTTPHandler) -> HandlerRunner {
        let runner = HandlerRunner()
        Task(executorPreference: loop) {
            while let work = await runner.next() {
                await handler.handle(work.request, writer: work.exchange)
                await work.exchange.handlerReturned()
            }
        }
        return runner
    }

    /// Hands the next request to the task (it runs once the previous handler run has returned).
    func submit(_ request: HTTPRequest, _ exchange: Exchange) {
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: (request, exchange))
        } else {
            pending.append((request, exchange))
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
        if !pending.isEmpty { return pending.removeFirst() }
        if closed { return nil }
        return await withUnsafeContinuation { waiter = $0 }
    }
}
