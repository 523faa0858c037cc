import Dispatch
import EventLoops
import GatehouseTime
import Synchronization

/// The `gatehouse_active_sessions` gauge, counted on a thread of its own so that a scrape of
/// `/metrics` (answered on an event loop) only reads a number and never waits for the database.
///
/// The count is refreshed every `interval` and soon after a login or logout (`nudge()`); between
/// refreshes it may lag by sessions that expired or that another process created. Until the first
/// count succeeds, or while counting fails, the value is nil and the gauge is left out.
public final class ActiveSessionsGauge: Sendable {
    private struct State {
        var value: Int?
        var nudged = false
        var running = false
        var stopping = false
    }

    private let state = Mutex(State())
    /// Wakes the counting thread early (a nudge or a stop).
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled once by the counting thread as it exits.
    private let exited = DispatchSemaphore(value: 0)

    public init() {}

    /// The last count, if any; never touches the database.
    public var value: Int? { state.withLock { $0.value } }

    /// Records a count (the counting thread, or a test).
    public func set(_ value: Int?) { state.withLock { $0.value = value } }

    /// Starts the counting thread: counts at once, then every `interval` and after each nudge.
    /// - Parameter count: the database count; a throw leaves the gauge without a value.
    public func start(interval: Duration = .seconds(15), count: @escaping @Sendable () throws -> Int) {
        let start = state.withLock { state -> Bool in
            guard !state.running, !state.stopping else { return false }
            state.running = true
            return true
        }
        guard start else { return }
        let seconds = TimeUnits.seconds(interval)
        let started = DetachedThread.start(name: "gatehouse-session-gauge") { [self] in
            while true {
                let value = try? count()
                let stop = state.withLock { state -> Bool in
                    if !state.stopping { state.value = value }
                    return state.stopping
                }
                if stop { break }
                _ = wake.wait(timeout: .now() + seconds)
                let stopAfterWait = state.withLock { state -> Bool in
                    state.nudged = false
                    return state.stopping
                }
                if stopAfterWait { break }
            }
            exited.signal()
        }
        // No thread: the gauge stays without a value, and `stop()` must not wait for one.
        if !started { exited.signal() }
    }

    /// Asks for a recount soon (after a login or logout). Cheap and non-blocking: several nudges
    /// before the thread wakes make one recount.
    public func nudge() {
        let signal = state.withLock { state -> Bool in
            guard state.running, !state.stopping, !state.nudged else { return false }
            state.nudged = true
            return true
        }
        if signal { wake.signal() }
    }

    /// Stops the counting thread and waits for it to finish its current count (call before the
    /// database closes).
    public func stop() {
        let wasRunning = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.stopping = true
            return state.running
        }
        guard wasRunning else { return }
        wake.signal()
        exited.wait()
    }
}
