import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What URLSession reported about one `https://` exchange, in order.
enum TLSUpstreamEvent: @unchecked Sendable {
    /// The upstream's status and headers (a 3xx included: redirects are never followed).
    case head(HTTPURLResponse)
    case body([UInt8])
    /// The body ended normally.
    case finished
    /// The exchange failed; `timedOut` when URLSession's idle timer or our first-byte deadline fired.
    case failed(timedOut: Bool, description: String)
}

/// The URLSession delegate of one exchange and the bounded buffer between URLSession's callbacks
/// and the async relay that writes to the browser.
///
/// Back-pressure: swift-corelibs-foundation cannot pause a transfer (`URLSessionTask.suspend()`
/// removes libcurl's easy handle, which restarts the request when resumed, and receive pausing is a
/// `fatalError` in its `_NativeProtocol`). It does deliver every callback through
/// `delegateQueue.addOperation`, called synchronously from libcurl's write callback on the session's
/// own serial work queue. `TLSUpstreamDelegateQueue` therefore blocks in `addOperation` while more
/// than `limit` bytes wait for the browser (or too many callbacks are queued): libcurl stops reading
/// the socket and TCP flow control slows the upstream. The session is private to this exchange, so
/// the blocked work queue stalls nothing else.
final class TLSUpstreamExchange: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// Bytes received and not yet taken by the relay before the upstream is held back.
    let limit: Int
    /// Callbacks handed to the delegate queue but not run yet (each body piece is at most
    /// libcurl's 16 KiB write size), so the queue itself stays bounded too.
    static let maxPendingOperations = 64

    private let condition = NSCondition()
    // Guarded by `condition`:
    private var events: [TLSUpstreamEvent] = []
    private var eventsStart = 0
    private var bufferedBytes = 0
    private var pendingOperations = 0
    private var waiter: CheckedContinuation<TLSUpstreamEvent, Never>?
    private var headSeen = false
    private var ended = false
    private var stopped = false
    private var task: URLSessionTask?

    init(limit: Int) {
        self.limit = limit
    }

    func attach(_ task: URLSessionTask) {
        condition.withLock { self.task = task }
    }

    // MARK: Relay side

    /// The next event; waits until URLSession reports one. Cancelling the calling task fails the
    /// exchange (and cancels the URLSession task).
    func next() async -> TLSUpstreamEvent {
        await withTaskCancellationHandler {
            await nextEvent()
        } onCancel: {
            push(.failed(timedOut: false, description: "the relay was cancelled"))
            stop()
        }
    }

    private func nextEvent() async -> TLSUpstreamEvent {
        await withCheckedContinuation { (continuation: CheckedContinuation<TLSUpstreamEvent, Never>) in
            condition.lock()
            if let event = popLocked() {
                condition.unlock()
                continuation.resume(returning: event)
            } else {
                waiter = continuation
                condition.unlock()
            }
        }
    }

    /// Stops the exchange (browser gone, or the relay is done): releases a blocked work queue first,
    /// because `URLSessionTask.cancel()` itself waits on that queue.
    func stop() {
        let task: URLSessionTask? = condition.withLock {
            stopped = true
            condition.broadcast()
            return ended ? nil : self.task
        }
        guard let task else { return }
        // Off the caller's thread: the handler may run on the server's event loop and `cancel()`
        // synchronises with URLSession's work queue.
        DispatchQueue.global().async { task.cancel() }
    }

    /// The first-byte deadline: without a head by now the exchange fails as timed out.
    func firstByteDeadlinePassed() {
        let expired = condition.withLock { () -> Bool in
            !headSeen && !ended
        }
        guard expired else { return }
        push(.failed(timedOut: true, description: "no response head within the first-byte timeout"))
        stop()
    }

    // MARK: Delegate queue side (called by TLSUpstreamDelegateQueue on URLSession's work queue)

    /// Blocks the caller while the buffer or the operation queue is full.
    func waitForRoom() {
        condition.lock()
        while !stopped && (bufferedBytes >= limit || pendingOperations >= Self.maxPendingOperations) {
            condition.wait()
        }
        pendingOperations += 1
        condition.unlock()
    }

    func operationRan() {
        condition.withLock {
            pendingOperations -= 1
            condition.broadcast()
        }
    }

    // MARK: URLSessionDataDelegate

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        if let http = response as? HTTPURLResponse { pushHead(http) }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard !data.isEmpty else { return }
        push(.body([UInt8](data)))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        // corelibs reports no `didReceive response` for 301/302/303/305-308: the redirect itself is the
        // answer the browser gets. Never followed (SPEC: the upstream's answer is passed on).
        pushHead(response)
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error {
            let timedOut = (error as? URLError)?.code == .timedOut
            push(.failed(timedOut: timedOut, description: "\(error)"))
        } else {
            push(.finished)
        }
    }

    // MARK: Buffer

    private func pushHead(_ response: HTTPURLResponse) {
        let first = condition.withLock { () -> Bool in
            defer { headSeen = true }
            return !headSeen
        }
        if first { push(.head(response)) }
    }

    private func push(_ event: TLSUpstreamEvent) {
        condition.lock()
        guard !stopped, !ended else { return condition.unlock() }
        switch event {
        case .body(let bytes): bufferedBytes += bytes.count
        case .finished, .failed: ended = true
        case .head: break
        }
        if let waiter {
            self.waiter = nil
            let next = popAfterAppending(event)
            condition.unlock()
            waiter.resume(returning: next)
        } else {
            events.append(event)
            condition.unlock()
        }
    }

    /// With a waiter present the queue is empty, so the event goes straight to it.
    private func popAfterAppending(_ event: TLSUpstreamEvent) -> TLSUpstreamEvent {
        events.append(event)
        return popLocked() ?? event
    }

    private func popLocked() -> TLSUpstreamEvent? {
        guard eventsStart < events.count else { return nil }
        let event = events[eventsStart]
        eventsStart += 1
        if eventsStart > 64 && eventsStart * 2 > events.count {
            events.removeFirst(eventsStart)
            eventsStart = 0
        }
        if case .body(let bytes) = event {
            bufferedBytes -= bytes.count
            condition.broadcast()
        }
        return event
    }
}
