import EventLoops

/// Monotonic seconds.
func now() -> Double { Double(EventLoop.monotonicNow()) / 1e9 }

/// Polls `condition` every 10 ms until it holds or `timeout` passes.
func eventually(timeout: Double = 3, _ condition: () -> Bool) async -> Bool {
    let deadline = now() + timeout
    while now() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return condition()
}
