/// Polls `condition` until it holds, for at most `timeout` seconds of real time, and returns whether
/// it did. The bound is for a loaded machine (tests run in parallel on two cores), not a timing: a
/// passing test returns as soon as the condition holds. For expiry and timeouts of our own, advance a
/// ``ManualClock`` instead.
public func eventually(timeout: Double = 20, pollEvery milliseconds: Int = 10,
                       _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(milliseconds))
    }
    return try await condition()
}
