/// When a keep-alive connection gives its buffers back: only after a whole sweep interval (the
/// server's deadline sweep, 250 ms) with no request begun on it.
///
/// Releasing as soon as an answer is out cost a `free` and a `malloc` of the read buffer, and a
/// regrown output buffer, on every request of a busy connection: the next request of a keep-alive
/// client has almost never arrived yet at that moment (+2–3 µs per 4 KiB static answer, measured).
/// A connection that is really idle holds neither buffer within two sweeps.
struct IdleBufferRelease: Sendable {
    private var requestSinceSweep = false

    /// A request began on the connection.
    mutating func requestBegan() { requestSinceSweep = true }

    /// Called by each sweep; true when the buffers should be given back now. `idle`: the
    /// connection waits for a head with nothing buffered and nothing left to send.
    mutating func sweep(idle: Bool) -> Bool {
        defer { requestSinceSweep = false }
        return idle && !requestSinceSweep
    }
}
