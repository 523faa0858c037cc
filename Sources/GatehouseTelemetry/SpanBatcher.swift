import EventLoops
import Synchronization

/// The batch span processor's queue (OpenTelemetry SDK "Batching processor"): spans wait here,
/// bounded, until a batch is full or the schedule delay has passed, then one thread of its own
/// takes them out. Adding a span takes one short lock and never waits for an export; a span past
/// the bound is dropped and counted.
final class SpanBatcher: @unchecked Sendable {
    private let condition = ThreadCondition()
    // Guarded by `condition`'s mutex.
    private var waiting: [SpanRecord] = []
    private var stopping = false
    private var finished = false

    let maxQueueSize: Int
    let maxBatchSize: Int
    let scheduleDelayNanoseconds: UInt64
    /// Spans dropped: the queue was full, or their export failed.
    let dropped = Atomic<UInt64>(0)

    init(maxQueueSize: Int, maxBatchSize: Int, scheduleDelayMilliseconds: Int) {
        self.maxQueueSize = maxQueueSize
        self.maxBatchSize = maxBatchSize
        scheduleDelayNanoseconds = UInt64(scheduleDelayMilliseconds) * 1_000_000
    }

    /// Queues a span (from any thread, an event loop's included).
    func add(_ span: SpanRecord) {
        condition.lock()
        guard waiting.count < maxQueueSize, !finished else {
            condition.unlock()
            dropped.add(1, ordering: .relaxed)
            return
        }
        waiting.append(span)
        let full = waiting.count == maxBatchSize
        condition.unlock()
        if full { condition.signal() }
    }

    /// The next batch: waits until one is full, the delay has passed, or the batcher stops.
    /// Nil once it has stopped and nothing waits any more.
    func nextBatch() -> [SpanRecord]? {
        condition.lock()
        defer { condition.unlock() }
        let deadline = EventLoop.monotonicNow() &+ scheduleDelayNanoseconds
        while waiting.count < maxBatchSize, !stopping {
            if !condition.wait(untilMonotonic: deadline) { break }
        }
        if waiting.isEmpty { return stopping ? nil : [] }
        if waiting.count <= maxBatchSize {
            // The whole queue is the batch: handed over, not copied (a copy retains every span's
            // strings and the removal releases them again).
            var batch: [SpanRecord] = []
            batch.reserveCapacity(maxBatchSize)
            swap(&batch, &waiting)
            return batch
        }
        let batch = Array(waiting.prefix(maxBatchSize))
        waiting.removeFirst(maxBatchSize)
        return batch
    }

    /// Waits (the export thread's back-off) until `nanoseconds` have passed or the batcher stops.
    func pause(nanoseconds: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        let deadline = EventLoop.monotonicNow() &+ nanoseconds
        while !stopping {
            if !condition.wait(untilMonotonic: deadline) { break }
        }
    }

    /// No more waiting: what is queued goes out in the next batches, then `nextBatch` gives nil.
    func stop() {
        condition.lock()
        stopping = true
        condition.unlock()
        condition.broadcast()
    }

    /// The export thread has ended: spans added from now on are dropped.
    func markFinished() {
        condition.lock()
        finished = true
        dropped.add(UInt64(waiting.count), ordering: .relaxed)
        waiting.removeAll()
        condition.unlock()
    }

    var isFinished: Bool {
        condition.lock()
        defer { condition.unlock() }
        return finished
    }

    var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }
}
