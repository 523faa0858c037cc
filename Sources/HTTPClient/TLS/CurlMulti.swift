import CCurl
#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import Synchronization

/// One libcurl multi handle driven by its own thread (`curl_multi_poll` + `curl_multi_wakeup`).
///
/// Every easy handle lives in this multi handle, so its connection cache is shared: a finished
/// transfer leaves its connection there and the next request to the same upstream reuses it, TLS
/// session and all. A transfer that fails or is removed before its end closes its connection
/// (libcurl never caches a connection whose exchange did not complete cleanly).
///
/// Threads: only the multi thread touches curl handles. Other threads post `Command`s and wake it;
/// the shared per-exchange state is in `CurlTransfer` behind its own mutex.
final class CurlMulti: Sendable {
    enum Command: Sendable {
        case start(CurlTransfer, CurlRequestPlan)
        /// Make libcurl's pause mask match the transfer's flags (after the async side changed them).
        case refreshPause(CurlTransfer)
        case cancel(CurlTransfer)
    }

    /// The multi handle's address, for `curl_multi_wakeup`, the one libcurl call documented as safe
    /// from any thread. Everything else is done with it on the multi thread only.
    private struct WakeHandle: @unchecked Sendable {
        let multi: UnsafeMutableRawPointer
    }

    private struct Inbox {
        var commands: [Command] = []
        var wakePending = false
    }

    private let wakeHandle: WakeHandle
    private let inbox = Mutex(Inbox())
    /// The multi thread's id, set when it starts.
    private let multiThread = Atomic<UInt>(0)
    /// Waiting tasks that libcurl's callbacks woke during the multi thread's current pass; resumed
    /// together when the pass ends (`resumeDeferred`). A small answer's head, body and end arrive
    /// in one pass, so the relay is woken once instead of three times (each wake-up is a hop to its
    /// event loop). Only the multi thread touches it; the mutex is never contended.
    private let deferredResumes = Mutex<[CheckedContinuation<Void, Never>]>([])

    /// Starts the thread. `maxCachedConnections` bounds the idle connections kept for reuse.
    init(maxCachedConnections: Int) throws(UpstreamError) {
        guard curl_global_init(gatehouse_curl_global_default()) == CURLE_OK, let multi = curl_multi_init() else {
            throw .connectFailed("libcurl could not be initialised")
        }
        _ = gatehouse_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maxCachedConnections)
        wakeHandle = WakeHandle(multi: multi)
        let loop = CurlMultiLoop(multi: multi, owner: self)
        // The thread alone uses the loop from here on.
        struct Handover: @unchecked Sendable { let loop: CurlMultiLoop }
        let handover = Handover(loop: loop)
        guard DetachedThread.start(name: "gatehouse-curl", { handover.loop.run() }) else {
            throw .connectFailed("cannot start the curl thread")
        }
    }

    /// Queues a command for the multi thread and wakes it.
    func post(_ command: Command) {
        let wake = inbox.withLock { inbox -> Bool in
            inbox.commands.append(command)
            defer { inbox.wakePending = true }
            return !inbox.wakePending
        }
        if wake { curl_multi_wakeup(wakeHandle.multi) }
    }

    /// Resumes `waiter`: at the end of the current pass when called on the multi thread (from a
    /// libcurl callback), at once from any other thread.
    func resume(_ waiter: CheckedContinuation<Void, Never>) {
        if multiThread.load(ordering: .relaxed) == UInt(pthread_self()) {
            deferredResumes.withLock { $0.append(waiter) }
        } else {
            waiter.resume()
        }
    }

    /// On the multi thread, when it starts.
    fileprivate func markMultiThread() {
        multiThread.store(UInt(pthread_self()), ordering: .relaxed)
    }

    /// On the multi thread, at the end of each pass (before it sleeps in `curl_multi_poll`).
    fileprivate func resumeDeferred() {
        let waiters = deferredResumes.withLock { waiters in
            defer { waiters.removeAll(keepingCapacity: true) }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The queued commands (on the multi thread, once per loop iteration).
    fileprivate func takeCommands() -> [Command] {
        inbox.withLock { inbox in
            inbox.wakePending = false
            defer { inbox.commands.removeAll(keepingCapacity: true) }
            return inbox.commands
        }
    }
}

/// The multi thread's own state. Never shared: it is created for the thread and only used there.
private final class CurlMultiLoop {
    private let multi: UnsafeMutableRawPointer
    /// The thread runs for the life of the process, so it keeps its owner (and its inbox) alive.
    private let owner: CurlMulti
    private var byHandle: [UnsafeMutableRawPointer: CurlEasy] = [:]
    private var byTransfer: [ObjectIdentifier: CurlEasy] = [:]

    init(multi: UnsafeMutableRawPointer, owner: CurlMulti) {
        self.multi = multi
        self.owner = owner
    }

    func run() {
        owner.markMultiThread()
        while true {
            for command in owner.takeCommands() { apply(command) }
            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            collectFinished()
            let now = EventLoop.monotonicNow()
            let nextDeadline = expireSilentTransfers(now: now)
            // Every wake-up the pass asked for, before sleeping: none waits for the next pass.
            owner.resumeDeferred()
            _ = curl_multi_poll(multi, nil, 0, pollTimeout(now: now, nextDeadline: nextDeadline), nil)
        }
    }

    private func apply(_ command: CurlMulti.Command) {
        switch command {
        case .start(let transfer, let plan):
            guard !transfer.isOver else { return }
            let easy: CurlEasy
            do {
                easy = try CurlEasy(transfer: transfer, plan: plan, now: EventLoop.monotonicNow())
            } catch {
                transfer.complete(.failed(error))
                return
            }
            guard curl_multi_add_handle(multi, easy.handle) == CURLM_OK else {
                easy.release()
                transfer.complete(.failed(.connectFailed("curl_multi_add_handle failed")))
                return
            }
            byHandle[easy.handle] = easy
            byTransfer[ObjectIdentifier(transfer)] = easy
        case .refreshPause(let transfer):
            guard let easy = byTransfer[ObjectIdentifier(transfer)] else { return }
            let paused = transfer.pauseState
            let mask = (paused.receive ? gatehouse_curl_pause_recv() : 0) | (paused.send ? gatehouse_curl_pause_send() : 0)
            // May call the write callback at once with the bytes libcurl held while paused.
            _ = curl_easy_pause(easy.handle, mask)
        case .cancel(let transfer):
            guard let easy = byTransfer[ObjectIdentifier(transfer)] else { return }
            remove(easy, outcome: .failed(.connectionClosed))
        }
    }

    /// Ends the transfers libcurl has finished, successfully or not.
    private func collectFinished() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                  let easy = byHandle[handle] else { continue }
            let code = message.pointee.data.result
            remove(easy, outcome: code == CURLE_OK ? .finished : .failed(easy.error(for: code)))
        }
    }

    /// Fails the transfers whose upstream has been silent too long: before the head, the first-byte
    /// timeout; after it, the body idle timeout. Time spent waiting on the browser does not count.
    /// Returns the earliest deadline still pending.
    private func expireSilentTransfers(now: UInt64) -> UInt64? {
        var earliest: UInt64? = nil
        for easy in Array(byHandle.values) {
            if easy.transfer.waitsOnBrowser {
                easy.lastActivity = now
            }
            let limit = easy.headArrived ? easy.transfer.limits.bodyIdleNanoseconds : easy.transfer.limits.firstByteNanoseconds
            let deadline = easy.lastActivity &+ limit
            if now >= deadline {
                remove(easy, outcome: .failed(easy.headArrived ? .bodyTimeout : .firstByteTimeout))
            } else {
                earliest = min(earliest ?? deadline, deadline)
            }
        }
        return earliest
    }

    private func pollTimeout(now: UInt64, nextDeadline: UInt64?) -> Int32 {
        var milliseconds = byHandle.isEmpty ? 10_000 : 1_000
        var curlTimeout = -1
        if curl_multi_timeout(multi, &curlTimeout) == CURLM_OK, curlTimeout >= 0 {
            milliseconds = min(milliseconds, curlTimeout)
        }
        if let nextDeadline {
            milliseconds = min(milliseconds, Int((nextDeadline &- now) / 1_000_000) + 1)
        }
        return Int32(milliseconds)
    }

    /// Takes a transfer out of the multi handle (closing its connection unless it completed) and
    /// reports its outcome; the first outcome recorded wins.
    private func remove(_ easy: CurlEasy, outcome: CurlTransfer.Outcome) {
        _ = curl_multi_remove_handle(multi, easy.handle)
        byHandle[easy.handle] = nil
        byTransfer[ObjectIdentifier(easy.transfer)] = nil
        easy.transfer.complete(outcome)
        easy.release()
    }
}
