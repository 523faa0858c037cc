import GatehouseTime

#if canImport(Glibc)
import Glibc
import CLinux
#endif
import Synchronization

/// Something registered with an event loop for readiness notifications. Called on the loop thread.
public protocol EventLoopSelectable: AnyObject {
    func socketReadable()
    func socketWritable()
    /// Error or hang-up reported by epoll.
    func socketHangup()
    /// The peer shut down its sending side (EPOLLRDHUP): an EOF waits behind any buffered bytes.
    func socketReadHangup()
}

extension EventLoopSelectable {
    public func socketReadHangup() {}
}

/// One epoll-driven event loop on its own thread.
///
/// Sockets are registered edge-triggered for both directions once (no `epoll_ctl` per request); the
/// owner remembers readiness and reads or writes when it wants to. The loop is also a `TaskExecutor`:
/// handler tasks created with `Task(executorPreference: loop)` run their synchronous stretches on this
/// thread, so a request is parsed, handled and answered without hopping to another thread, and a
/// continuation resumed by socket readiness continues here.
public final class EventLoop: TaskExecutor, @unchecked Sendable {
    public let index: Int
    private let epollFD: Int32
    private let wakeFD: Int32
    private var thread: pthread_t?
    /// The loop thread's id, published once when it starts (read from any thread by `inEventLoop`).
    private let threadID = Atomic<UInt>(0)

    // Loop-thread-only state.
    //
    // `@exclusivity(unchecked)`: these are touched many times per request on the hot path, and each
    // checked access costs a runtime call (about 60 instructions, 2 % of a proxied request by
    // callgrind, commit 539f757). Unchecked is safe here because no access to any of them overlaps
    // another access to the same property: they are read or mutated in single statements that
    // call out to nothing (the heap's methods, `append`, subscripts), and every callout (a job, a
    // timer or hook body, a socket's handler) runs after its array was copied out or its access
    // ended (`takeDue` returns the bodies; `for … in` iterates a copy; `localValue` calls `make`
    // between two accesses). Keep it so when changing this file: an overlapping access is no
    // longer trapped.
    /// Registered sockets by fd, each with the generation it was registered under: epoll events carry
    /// both, so an event queued for a closed socket is never delivered to a new one that reused its fd.
    @exclusivity(unchecked) private var selectables: [(any EventLoopSelectable)?] = []
    @exclusivity(unchecked) private var generations: [UInt32] = []
    @exclusivity(unchecked) private var nextGeneration: UInt32 = 1
    @exclusivity(unchecked) private var localWork: [Work] = []
    /// The other half of `localWork`'s double buffer (see `runLocalWork`).
    @exclusivity(unchecked) private var spareWork: [Work] = []
    @exclusivity(unchecked) private var timers = TimerHeap()
    @exclusivity(unchecked) private var endOfBatchHooks: [() -> Void] = []
    /// Values other modules keep per loop (`localValue`).
    @usableFromInline @exclusivity(unchecked) var localValues: [(key: ObjectIdentifier, value: AnyObject)] = []
    @exclusivity(unchecked) private var running = true
    /// Monotonic time in nanoseconds, refreshed once per loop iteration.
    ///
    /// A computed property over an unchecked stored one: code in other modules that read a stored
    /// property directly got the runtime exclusivity check the attribute turns off here (about
    /// 100 instructions a read, eight reads per proxied request); through the getter, it is a call.
    public var now: UInt64 { currentTime }
    @exclusivity(unchecked) private var currentTime: UInt64 = EventLoop.monotonicNow()

    // Cross-thread submission.
    private struct Inbox {
        var work: [Work] = []
        var wakePending = false
        var stopping = false
    }
    private let inbox = Mutex(Inbox())

    // Closures submitted from other threads are `@Sendable` (see `execute`); jobs are runtime-managed.
    private enum Work: @unchecked Sendable {
        case job(UnownedJob)
        case closure(() -> Void)
    }

    /// The thread's name (`top -H`, /proc): "gatehouse-loop<index>" unless given.
    private let threadName: String?

    public init(index: Int, threadName: String? = nil) throws {
        self.index = index
        self.threadName = threadName
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw SocketError.last("epoll_create1") }
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wakeFD >= 0 else {
            close(epollFD)
            throw SocketError.last("eventfd")
        }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = UInt64(UInt32(bitPattern: wakeFD))
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event) == 0 else { throw SocketError.last("epoll_ctl(eventfd)") }
    }

    deinit {
        close(epollFD)
        close(wakeFD)
    }

    /// The system's monotonic reading (``SystemClock``), in nanoseconds.
    @inline(__always)
    public static func monotonicNow() -> UInt64 { SystemClock.monotonicNanoseconds() }

    // MARK: Thread

    /// Starts the loop's thread.
    public func start() {
        let box = Unmanaged.passRetained(self)
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { raw in
            let loop = Unmanaged<EventLoop>.fromOpaque(raw!).takeRetainedValue()
            // Named for `top -H` and /proc: otherwise a thread inherits its creator's name (a
            // cooperative-pool thread's, when the server starts from a task).
            _ = gatehouse_set_thread_name(loop.threadName ?? "gatehouse-loop\(loop.index)")
            loop.run()
            return nil
        }, box.toOpaque())
        if rc != 0 { box.release() } else { thread = tid }
    }

    /// Asks the loop to stop after its current iteration and waits for its thread.
    public func stopAndJoin() {
        inbox.withLock { $0.stopping = true }
        wake()
        if let thread, !inEventLoop { pthread_join(thread, nil) }
    }

    public var inEventLoop: Bool { pthread_self() == threadID.load(ordering: .acquiring) }

    /// `body` with the loop running on the calling thread, if any, without retaining it (the loop
    /// outlives every call made on its own thread): `current` is a retain and a release.
    @inlinable
    public static func withCurrent<R>(_ body: (EventLoop) -> R) -> R? {
        guard let raw = currentLoopPointer() else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(raw)._withUnsafeGuaranteedRef(body)
    }

    @usableFromInline
    static func currentLoopPointer() -> UnsafeMutableRawPointer? {
        pthread_getspecific(currentLoopKey.key)
    }

    /// The loop running on the calling thread, if any.
    public static var current: EventLoop? {
        guard let raw = pthread_getspecific(currentLoopKey.key) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: Work submission

    /// Runs `body` on the loop thread: soon if called from it, else after a wake-up.
    public func execute(_ body: @escaping @Sendable () -> Void) {
        if inEventLoop {
            localWork.append(.closure(body))
        } else {
            submit(.closure(body))
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if inEventLoop {
            localWork.append(.job(unowned))
        } else {
            submit(.job(unowned))
        }
    }

    private func submit(_ work: Work) {
        let needsWake = inbox.withLock { state -> Bool in
            state.work.append(work)
            if state.wakePending { return false }
            state.wakePending = true
            return true
        }
        if needsWake { wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Suspends until the caller runs on this loop's thread (a no-op when it already does).
    public func hop() async {
        if inEventLoop { return }
        await withUnsafeContinuation { (c: UnsafeContinuation<Void, Never>) in
            execute { c.resume() }
        }
    }

    /// Forgets the value kept for `key` (its owner retired). Loop thread only.
    public func removeLocalValue(for key: ObjectIdentifier) {
        localValues.removeAll { $0.key == key }
    }

    /// The value kept on this loop for `key`, made by `make` the first time. Loop thread only: it
    /// needs no lock, and it goes with the loop (a client's pool of this loop's connections, say).
    @inlinable
    public func localValue<Value: AnyObject>(for key: ObjectIdentifier, _ make: () -> Value) -> Value {
        // A short list searched in place (a loop holds a value or two): hashing the key and a
        // generic cast cost about 500 instructions per proxied request.
        let found: AnyObject? = localValues.withUnsafeBufferPointer { entries in
            for index in entries.indices where entries[index].key == key { return entries[index].value }
            return nil
        }
        if let found, let value = found as? Value { return value }
        let value = make()
        localValues.removeAll { $0.key == key }
        localValues.append((key, value))
        return value
    }

    /// Called once at the end of every batch of events (e.g. to flush buffered access-log lines).
    public func addEndOfBatchHook(_ hook: @escaping () -> Void) {
        endOfBatchHooks.append(hook)
    }

    // MARK: Registration (loop thread only)

    /// Registers `fd` edge-triggered for input and output.
    public func register(_ fd: Int32, _ selectable: any EventLoopSelectable) throws {
        try add(fd, selectable, events: EPOLLIN.rawValue | EPOLLOUT.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue)
    }

    /// Registers a listening socket (level-triggered input only).
    public func registerListener(_ fd: Int32, _ selectable: any EventLoopSelectable) throws {
        try add(fd, selectable, events: EPOLLIN.rawValue)
    }

    private func add(_ fd: Int32, _ selectable: any EventLoopSelectable, events: UInt32) throws {
        let index = Int(fd)
        if index >= selectables.count {
            let grow = index - selectables.count + 64
            selectables.append(contentsOf: repeatElement(nil, count: grow))
            generations.append(contentsOf: repeatElement(0, count: grow))
        }
        nextGeneration &+= 1
        if nextGeneration == 0 { nextGeneration = 1 }
        selectables[index] = selectable
        generations[index] = nextGeneration
        var event = epoll_event()
        event.events = events
        event.data.u64 = UInt64(nextGeneration) << 32 | UInt64(UInt32(bitPattern: fd))
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else {
            selectables[index] = nil
            generations[index] = 0
            throw SocketError.last("epoll_ctl(ADD)")
        }
    }

    /// Removes `fd` from the loop. The caller closes it.
    public func deregister(_ fd: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
        let index = Int(fd)
        if index < selectables.count {
            selectables[index] = nil
            generations[index] = 0
        }
    }

    // MARK: Timers (loop thread only)

    /// Runs `body` on the loop after `nanoseconds`. Returns an id for `cancelTimer`.
    @discardableResult
    public func scheduleTimer(afterNanoseconds nanoseconds: UInt64, _ body: @escaping () -> Void) -> TimerID {
        timers.schedule(deadline: EventLoop.monotonicNow() &+ nanoseconds, body)
    }

    public func cancelTimer(_ id: TimerID) {
        timers.cancel(id)
    }

    // MARK: The loop

    private func run() {
        threadID.store(pthread_self(), ordering: .releasing)
        pthread_setspecific(currentLoopKey.key, Unmanaged.passUnretained(self).toOpaque())
        let capacity = 512
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        let executor = asUnownedTaskExecutor()

        while running {
            runLocalWork(executor)

            var timeout: Int32 = -1
            if !localWork.isEmpty {
                timeout = 0
            } else if let next = timers.nextDeadline() {
                // The turn's reading, as nginx does: a timer then fires late by this turn's work at
                // most, and the clock is read once per turn instead of twice (two per proxied request).
                let current = currentTime
                timeout = next <= current ? 0 : Int32(min((next - current + 999_999) / 1_000_000, 60_000))
            }
            let count = epoll_wait(epollFD, events, Int32(capacity), timeout)
            currentTime = EventLoop.monotonicNow()
            if count > 0 {
                for i in 0..<Int(count) {
                    let event = events[i]
                    let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: event.data.u64))
                    let generation = UInt32(truncatingIfNeeded: event.data.u64 >> 32)
                    if fd == wakeFD && generation == 0 {
                        drainInbox()
                        continue
                    }
                    let index = Int(fd)
                    guard index < selectables.count, generations[index] == generation,
                          let target = selectables[index] else { continue }
                    let flags = event.events
                    if flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 {
                        target.socketHangup()
                        continue
                    }
                    if flags & EPOLLRDHUP.rawValue != 0 { target.socketReadHangup() }
                    if flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue) != 0 { target.socketReadable() }
                    // The handler may have closed the fd (and another socket may reuse it) in between:
                    // deregistering resets the generation and registering gives a new one, so the
                    // generation alone tells (comparing the entry with nil copied it: a retain and a
                    // release per event).
                    if flags & EPOLLOUT.rawValue != 0, generations[index] == generation {
                        target.socketWritable()
                    }
                }
            }
            for body in timers.takeDue(now: now) { body() }
            runLocalWork(executor)
            // By index: iterating the array retained (and released) its buffer on every turn.
            var hook = 0
            while hook < endOfBatchHooks.count {
                endOfBatchHooks[hook]()
                hook += 1
            }
        }
    }

    private func runLocalWork(_ executor: UnownedTaskExecutor) {
        // Bounded: work added while running waits for the next iteration, so sockets are not starved.
        var rounds = 0
        while !localWork.isEmpty && rounds < 4 {
            rounds += 1
            // Swapped with a spare array rather than copied: `removeAll(keepingCapacity:)` on the
            // shared buffer allocated a new one on every round.
            swap(&spareWork, &localWork)
            for work in spareWork {
                switch work {
                case .job(let job): job.runSynchronously(on: executor)
                case .closure(let body): body()
                }
            }
            spareWork.removeAll(keepingCapacity: true)
        }
    }

    private func drainInbox() {
        var value: UInt64 = 0
        _ = read(wakeFD, &value, 8)
        let (work, stop) = inbox.withLock { state -> ([Work], Bool) in
            let work = state.work
            state.work.removeAll()
            state.wakePending = false
            return (work, state.stopping)
        }
        localWork.append(contentsOf: work)
        if stop { running = false }
    }
}

public struct TimerID: Hashable, Sendable {
    let value: UInt64
}

/// A binary min-heap of deadlines; cancelled timers are skipped when they surface.
struct TimerHeap {
    private var heap: [(deadline: UInt64, id: UInt64)] = []
    private var bodies: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1
    /// The id of the heap's top once it was found to have a body (0: not known): the loop asks for
    /// the next deadline on every turn, and a dictionary look-up each time was a few percent of a
    /// proxied request. Ids are never reused, so a new top (scheduled, popped) never matches it.
    private var liveTop: UInt64 = 0

    mutating func nextDeadline() -> UInt64? {
        if let top = heap.first, top.id == liveTop { return top.deadline }
        while let top = heap.first, bodies[top.id] == nil { pop() }
        liveTop = heap.first?.id ?? 0
        return heap.first?.deadline
    }

    mutating func schedule(deadline: UInt64, _ body: @escaping () -> Void) -> TimerID {
        let id = nextID
        nextID &+= 1
        bodies[id] = body
        heap.append((deadline, id))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            if heap[parent].deadline <= heap[child].deadline { break }
            heap.swapAt(parent, child)
            child = parent
        }
        return TimerID(value: id)
    }

    mutating func cancel(_ id: TimerID) {
        bodies[id.value] = nil
        if id.value == liveTop { liveTop = 0 }
    }

    /// Removes and returns the bodies that are due; the caller runs them (they may schedule timers).
    mutating func takeDue(now: UInt64) -> [() -> Void] {
        var due: [() -> Void] = []
        while let top = heap.first, top.deadline <= now {
            pop()
            if let body = bodies.removeValue(forKey: top.id) { due.append(body) }
        }
        return due
    }

    private mutating func pop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            if smallest == parent { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// The pthread key under which each loop thread records its loop.
private final class LoopKey: Sendable {
    let key: pthread_key_t
    init() {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        self.key = key
    }
}

private let currentLoopKey = LoopKey()
