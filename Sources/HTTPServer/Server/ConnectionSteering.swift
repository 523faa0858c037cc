/// Which event loop serves an accepted connection when the loops are kept one per CPU.
///
/// The kernel spreads connections over the loops' `SO_REUSEPORT` listeners by a hash of their
/// addresses, so most connections are served on a CPU other than the one that processes their
/// packets (a network queue's CPU; on loopback, the client's): every request's socket structures
/// then cross cores. Handed to the loop on its packets' CPU (`SO_INCOMING_CPU`), a connection is
/// received, answered and sent from one core's caches (bench/RESULTS.md, the entry of 9d561ee).
///
/// Unlike `SO_INCOMING_CPU` on the listeners, which sends every connection to the loop on the CPU
/// that saw its handshake, this never piles connections on one loop when one CPU takes all of a
/// machine's network interrupts (a single-queue NIC): a loop only takes a connection from another
/// while it serves at most `slack` more than that one.
public struct ConnectionSteering: Sendable, Equatable {
    /// The CPU each loop is kept on, by loop index.
    public let loopCPUs: [Int]

    public init?(loopCPUs: [Int]) {
        guard loopCPUs.count > 1, Set(loopCPUs).count == loopCPUs.count else { return nil }
        self.loopCPUs = loopCPUs
    }

    /// How many more connections than the accepting loop the target loop may serve and still take one.
    public static func slack(acceptingLoad: Int) -> Int { max(4, acceptingLoad / 8) }

    /// The loop to serve a connection that `acceptingLoop` accepted and whose packets `incomingCPU`
    /// processed (negative when unknown); `load(i)` is loop i's open connections.
    public func target(incomingCPU: Int, acceptingLoop: Int, load: (Int) -> Int) -> Int {
        guard incomingCPU >= 0, let preferred = loopCPUs.firstIndex(of: incomingCPU),
              preferred != acceptingLoop else { return acceptingLoop }
        let accepting = load(acceptingLoop)
        return load(preferred) <= accepting + Self.slack(acceptingLoad: accepting) ? preferred : acceptingLoop
    }
}
