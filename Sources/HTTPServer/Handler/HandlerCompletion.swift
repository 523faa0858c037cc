import EventLoops

/// How a handler that took a request on the loop (`HandlerAnswer.onLoop`) says it is done with it,
/// or goes on with it in a task: what returning from its work does for a request run in a task.
public struct HandlerCompletion: Sendable {
    let exchange: Exchange

    /// The connection's loop, where the handler is called and must answer.
    public var loop: EventLoop { exchange.loop }

    /// The handler is done with the request: whatever it left open is completed (no answer becomes
    /// a `500`, an open stream is ended), as when `handle` returns.
    public func handlerReturned() {
        exchange.handlerReturnedSoon()
    }

    /// Goes on with the request in a task on the connection's loop, then completes it as
    /// `handlerReturned()` does.
    public func continueInTask(_ work: @escaping @Sendable () async -> Void) {
        let exchange = self.exchange
        Task(executorPreference: exchange.loop) {
            await work()
            if !exchange.handlerReturnedImmediately() { await exchange.handlerReturned() }
        }
    }
}
