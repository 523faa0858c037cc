#if canImport(Glibc)
import Glibc
#endif

/// A mutex and its condition variable (what Foundation's `NSCondition` is), on pthreads and the
/// monotonic clock, so that a deadline wait is not moved by a change of the wall clock.
///
/// Used like `NSCondition`: `lock()`, check the guarded state, `wait()` while it is not ready,
/// `unlock()`; a thread that changes the state calls `signal()` or `broadcast()` under the lock.
public final class ThreadCondition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }

    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Waits for a signal (or a spurious wake-up); the caller holds the lock.
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits for a signal until the monotonic reading `deadline` (nanoseconds, as
    /// `EventLoop.monotonicNow()`); false once the deadline has passed. The caller holds the lock.
    @discardableResult
    public func wait(untilMonotonic deadline: UInt64) -> Bool {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }

    public func signal() { pthread_cond_signal(condition) }

    public func broadcast() { pthread_cond_broadcast(condition) }
}
