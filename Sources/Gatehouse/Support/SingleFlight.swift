import EventLoops
import Synchronization

/// One piece of work per key at a time: a caller that asks for a key whose work is under way waits
/// for that work's value instead of starting its own (one refresh per session, one grant per token,
/// one store read per session, however many requests ask at once).
///
/// The first caller starts the work in a task of its own, on the caller's event loop, and waits for
/// it; the others wait on continuations and are resumed with its value once the flight has ended,
/// so a caller arriving after that starts a new flight: work that stores what it obtains should
/// look there first. Being its own task, the work is not cancelled with the caller that started
/// it: a cancelled leader cannot hand its waiters a cancelled refresh or a failed read.
///
/// A flight carries a tag: a caller joins only a flight started with its own tag, else it runs the
/// work alone, without a flight. The session cache tags its reads with the generation of its
/// sessions, so a read begun before a logout never answers a request sent after it.
final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Flight {
        let tag: UInt64
        var waiters: [UnsafeContinuation<Value?, Never>] = []
    }

    private enum Role { case leads, joins, alone }

    private let flights = Mutex<[Key: Flight]>([:])

    init() {}

    /// `work`'s value for `key`, or the value of the flight under way with the same `tag`.
    func run(_ key: Key, tag: UInt64 = 0, _ work: @escaping @Sendable () async -> Value) async -> Value {
        let role = flights.withLock { flights -> Role in
            guard let flight = flights[key] else {
                flights[key] = Flight(tag: tag)
                return .leads
            }
            return flight.tag == tag ? .joins : .alone
        }
        switch role {
        case .leads:
            let value = await Self.runUncancelled(work)
            for waiter in flights.withLock({ $0.removeValue(forKey: key)?.waiters ?? [] }) {
                waiter.resume(returning: value)
            }
            return value
        case .joins:
            let joined: Value? = await withUnsafeContinuation { continuation in
                let added = flights.withLock { flights -> Bool in
                    guard flights[key]?.tag == tag else { return false }  // it ended meanwhile
                    flights[key]?.waiters.append(continuation)
                    return true
                }
                if !added { continuation.resume(returning: nil) }
            }
            if let joined { return joined }
            return await run(key, tag: tag, work)
        case .alone:
            return await work()
        }
    }

    /// `work` in a task of its own (on this loop when called on one, as handler tasks are).
    private static func runUncancelled(_ work: @escaping @Sendable () async -> Value) async -> Value {
        guard let loop = EventLoop.current else { return await Task { await work() }.value }
        return await Task(executorPreference: loop) {
            await loop.hop()
            return await work()
        }.value
    }

    /// How many flights are under way (tests).
    var count: Int { flights.withLock { $0.count } }
}
