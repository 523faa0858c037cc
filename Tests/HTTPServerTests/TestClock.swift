import EventLoops

/// Monotonic seconds.
func now() -> Double { Double(EventLoop.monotonicNow()) / 1e9 }
