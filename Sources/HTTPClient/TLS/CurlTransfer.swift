import HTTP1
import Synchronization

/// The state one `https://` exchange shares between the curl multi thread (libcurl's callbacks) and
/// the async side (the upload pump and the relay to the browser). Every field sits behind one mutex;
/// the easy handle itself never leaves the multi thread (see `CurlEasy`).
///
/// Back-pressure, both ways, with libcurl's pause mechanism:
/// - upload: the pump reads the browser's body only while fewer than `limits.uploadBuffer` bytes
///   wait here; when libcurl asks for bytes and none wait, the read callback pauses the sending side
///   (`CURL_READFUNC_PAUSE`) and the next piece from the browser unpauses it.
/// - download: the write callback takes pieces until `limits.downloadBuffer` bytes wait for the
///   browser, then pauses the receiving side (`CURL_WRITEFUNC_PAUSE`: libcurl keeps that piece and
///   stops reading the socket, so TCP flow control holds the upstream); the relay unpauses it once
///   it has taken the backlog down to half.
/// Pausing and unpausing happen on the multi thread only: the async side posts `refreshPause`.
/// The waiting tasks that libcurl's callbacks wake are resumed when the multi thread's pass ends
/// (`CurlMulti.resume`), together.
final class CurlTransfer: Sendable {
    struct Limits: Sendable {
        var uploadBuffer = 1 << 20
        var downloadBuffer = 1 << 20
        /// Largest piece handed to the relay at once (pieces from libcurl are coalesced up to this).
        var relayPiece = 256 << 10
        var connectTimeoutMilliseconds = 5_000
        var firstByteNanoseconds: UInt64 = 30_000_000_000
        var bodyIdleNanoseconds: UInt64 = 300_000_000_000
        /// Set for a fetch read whole (`awaitWhole`): the head and body pieces wake the waiting
        /// task no more, only the end or a body above this many bytes does (one wake-up per exchange).
        var wholeBodyLimit: Int?
    }

    enum Outcome: Sendable, Equatable {
        case finished
        case failed(UpstreamError)
    }

    /// What the read callback should answer.
    enum UploadStep {
        case bytes(Int)
        case end
        case pause
        case abort
    }

    private struct State {
        var upload: [[UInt8]] = []
        var uploadOffset = 0
        var uploadQueued = 0
        var uploadEnded = false
        /// The read callback found nothing and paused the sending side.
        var uploadPaused = false
        var uploadRoomWaiter: CheckedContinuation<Void, Never>?

        var head: (HTTPResponseHead, UpstreamResponseFraming)?
        var download: [[UInt8]] = []
        var downloadQueued = 0
        /// The write callback refused a piece and paused the receiving side.
        var downloadPaused = false
        var consumerWaiter: CheckedContinuation<Void, Never>?

        /// Set once: the transfer is over (the relay may still drain `download` after `.finished`).
        var outcome: Outcome?
    }

    let limits: Limits
    private let multi: CurlMulti
    private let state = Mutex(State())

    init(multi: CurlMulti, limits: Limits) {
        self.multi = multi
        self.limits = limits
    }

    // MARK: Async side: upload pump

    /// Waits until the upload buffer has room. False once the transfer is over (stop pumping).
    func waitForUploadRoom() async -> Bool {
        while true {
            let verdict: Bool? = state.withLock { s in
                if s.outcome != nil { return false }
                if s.uploadQueued < limits.uploadBuffer { return true }
                return nil
            }
            if let verdict { return verdict }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { s -> Bool in
                    if s.outcome != nil || s.uploadQueued < limits.uploadBuffer { return true }
                    s.uploadRoomWaiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// Queues one piece of the browser's body for libcurl.
    func pushUpload(_ piece: [UInt8]) {
        guard !piece.isEmpty else { return }
        let unpause = state.withLock { s -> Bool in
            guard s.outcome == nil else { return false }
            s.upload.append(piece)
            s.uploadQueued += piece.count
            defer { s.uploadPaused = false }
            return s.uploadPaused
        }
        if unpause { multi.post(.refreshPause(self)) }
    }

    /// The browser's body ended: libcurl gets the end once it has read what is queued.
    func endUpload() {
        let unpause = state.withLock { s -> Bool in
            s.uploadEnded = true
            defer { s.uploadPaused = false }
            return s.uploadPaused
        }
        if unpause { multi.post(.refreshPause(self)) }
    }

    /// Reading the browser's body failed: the exchange fails with that error and is stopped.
    func failUpload(_ error: HTTPBodyError) {
        if complete(.failed(.requestBody(error))) { multi.post(.cancel(self)) }
    }

    // MARK: Async side: relay

    /// Waits for the final response head.
    func awaitHead() async throws(UpstreamError) -> (HTTPResponseHead, UpstreamResponseFraming) {
        while true {
            // A head that arrived is the answer even if the exchange broke right after it: the
            // relay then sees the failure in the body (as on the `http://` path), whatever the timing.
            let ready: Result<(HTTPResponseHead, UpstreamResponseFraming), UpstreamError>? = state.withLock { s in
                if let head = s.head { return .success(head) }
                if case .failed(let error) = s.outcome { return .failure(error) }
                if s.outcome == .finished { return .failure(.invalidResponse("the upstream sent no response head")) }
                return nil
            }
            if let ready { return try ready.get() }
            await waitForConsumerEvent { $0.outcome != nil || $0.head != nil }
        }
    }

    /// The head and the whole body once the exchange has ended, or nil as soon as more than
    /// `limits.wholeBodyLimit` body bytes have arrived (the caller then cancels).
    func awaitWhole() async throws(UpstreamError) -> (HTTPResponseHead, [UInt8])? {
        let limit = limits.wholeBodyLimit ?? .max
        await waitForConsumerEvent { $0.outcome != nil || $0.downloadQueued > limit }
        let whole: Result<(HTTPResponseHead, [UInt8])?, UpstreamError> = state.withLock { s in
            if s.downloadQueued > limit { return .success(nil) }
            if case .failed(let error) = s.outcome { return .failure(error) }
            guard let (head, _) = s.head else { return .failure(.invalidResponse("the upstream sent no response head")) }
            var body: [UInt8] = []
            body.reserveCapacity(s.downloadQueued)
            for piece in s.download { body.append(contentsOf: piece) }
            s.download.removeAll()
            s.downloadQueued = 0
            return .success((head, body))
        }
        return try whole.get()
    }

    /// The next body piece (coalesced), nil at the end of the body.
    func nextBodyPiece() async throws(UpstreamError) -> [UInt8]? {
        while true {
            let (ready, unpause) = state.withLock { s -> (Result<[UInt8]?, UpstreamError>?, Bool) in
                if case .failed(let error) = s.outcome { return (.failure(error), false) }
                if s.downloadQueued > 0 {
                    let piece = Self.takeDownload(&s, upTo: limits.relayPiece)
                    let unpause = s.downloadPaused && s.downloadQueued <= limits.downloadBuffer / 2
                    if unpause { s.downloadPaused = false }
                    return (.success(piece), unpause)
                }
                if s.outcome == .finished { return (.success(nil), false) }
                return (nil, false)
            }
            if unpause { multi.post(.refreshPause(self)) }
            if let ready { return try ready.get() }
            await waitForConsumerEvent { $0.outcome != nil || $0.downloadQueued > 0 }
        }
    }

    /// Stops the exchange (the relay is done early, or the browser went away). Idempotent.
    func cancel() {
        if complete(.failed(.connectionClosed)) { multi.post(.cancel(self)) }
    }

    var isOver: Bool { state.withLock { $0.outcome != nil } }

    private static func takeDownload(_ s: inout State, upTo limit: Int) -> [UInt8] {
        if s.download[0].count >= limit || s.download.count == 1 {
            let first = s.download.removeFirst()
            s.downloadQueued -= first.count
            return first
        }
        var piece: [UInt8] = []
        piece.reserveCapacity(min(limit, s.downloadQueued))
        var taken = 0
        while taken < s.download.count, piece.count + s.download[taken].count <= limit {
            piece.append(contentsOf: s.download[taken])
            taken += 1
        }
        s.download.removeFirst(taken)
        s.downloadQueued -= piece.count
        return piece
    }

    /// Parks the relay until `isReady` holds (checked under the lock, so no wake-up is lost).
    private func waitForConsumerEvent(_ isReady: (borrowing State) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if isReady(s) { return true }
                s.consumerWaiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }

    // MARK: Multi thread side (libcurl callbacks and the loop)

    /// The read callback: copies queued upload bytes into libcurl's buffer.
    func readUpload(into buffer: UnsafeMutableRawBufferPointer) -> UploadStep {
        let (step, waiter) = state.withLock { s -> (UploadStep, CheckedContinuation<Void, Never>?) in
            if s.outcome != nil { return (.abort, nil) }
            var copied = 0
            while copied < buffer.count, !s.upload.isEmpty {
                let first = s.upload[0]
                let n = min(buffer.count - copied, first.count - s.uploadOffset)
                first.withUnsafeBytes { source in
                    UnsafeMutableRawBufferPointer(rebasing: buffer[copied..<(copied + n)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[s.uploadOffset..<(s.uploadOffset + n)]))
                }
                copied += n
                s.uploadOffset += n
                if s.uploadOffset == first.count {
                    s.upload.removeFirst()
                    s.uploadOffset = 0
                }
            }
            s.uploadQueued -= copied
            var waiter: CheckedContinuation<Void, Never>? = nil
            if copied > 0, s.uploadQueued < limits.uploadBuffer {
                waiter = s.uploadRoomWaiter
                s.uploadRoomWaiter = nil
            }
            if copied > 0 { return (.bytes(copied), waiter) }
            if s.uploadEnded { return (.end, nil) }
            s.uploadPaused = true
            return (.pause, nil)
        }
        if let waiter { multi.resume(waiter) }
        return step
    }

    /// The write callback: false means "pause the receiving side", libcurl keeps the bytes.
    func acceptDownload(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let (accepted, waiter) = state.withLock { s -> (Bool, CheckedContinuation<Void, Never>?) in
            if s.downloadQueued >= limits.downloadBuffer {
                s.downloadPaused = true
                return (false, nil)
            }
            s.download.append(Array(bytes))
            s.downloadQueued += bytes.count
            if let limit = limits.wholeBodyLimit, s.downloadQueued <= limit { return (true, nil) }
            defer { s.consumerWaiter = nil }
            return (true, s.consumerWaiter)
        }
        if let waiter { multi.resume(waiter) }
        return accepted
    }

    func deliverHead(_ head: HTTPResponseHead, framing: UpstreamResponseFraming) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.head = (head, framing)
            if limits.wholeBodyLimit != nil { return nil }
            defer { s.consumerWaiter = nil }
            return s.consumerWaiter
        }
        if let waiter { multi.resume(waiter) }
    }

    /// Records how the transfer ended and wakes both waiters. Only the first outcome counts: true
    /// when this call recorded it.
    @discardableResult
    func complete(_ outcome: Outcome) -> Bool {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>]? in
            guard s.outcome == nil else { return nil }
            s.outcome = outcome
            if case .failed = outcome {
                s.download.removeAll()
                s.downloadQueued = 0
                s.upload.removeAll()
                s.uploadQueued = 0
            }
            let waiters = [s.consumerWaiter, s.uploadRoomWaiter].compactMap { $0 }
            s.consumerWaiter = nil
            s.uploadRoomWaiter = nil
            return waiters
        }
        guard let waiters else { return false }
        for waiter in waiters { multi.resume(waiter) }
        return true
    }

    /// The pause mask libcurl should have now (`curl_easy_pause` sets both directions at once).
    var pauseState: (receive: Bool, send: Bool) {
        state.withLock { ($0.downloadPaused, $0.uploadPaused) }
    }

    /// True while the exchange waits on the browser rather than the upstream (an upload paused for
    /// want of bytes, or a download paused for a slow reader): the upstream-silence timers stop.
    var waitsOnBrowser: Bool {
        state.withLock { $0.uploadPaused || $0.downloadPaused }
    }
}
