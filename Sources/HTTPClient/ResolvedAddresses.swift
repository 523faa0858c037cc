import EventLoops
import Synchronization

/// Upstream addresses by host name, each kept for `lifetimeNanoseconds` (as libcurl's DNS cache did):
/// an upstream or provider that moves is followed within a minute, and a busy one costs one lookup
/// a minute at most (only new connections ask; pooled ones never do; callers asking while a lookup
/// is under way wait for that one). `getaddrinfo` blocks, so it
/// runs on a short-lived thread of its own ("gatehouse-resolve"), never on a loop: a slow resolver
/// must not stall every connection of the loop. IP literals are never looked up.
final class ResolvedAddresses: Sendable {
    static let lifetimeNanoseconds: UInt64 = 60_000_000_000

    typealias LookUp = @Sendable (_ host: String, _ port: Int) -> Result<[SocketAddress], UpstreamError>
    private typealias Waiter = UnsafeContinuation<Result<[SocketAddress], UpstreamError>, Never>

    private let known = Mutex<[UpstreamKey: (addresses: [SocketAddress], resolvedAt: UInt64)]>([:])
    /// Callers waiting for a lookup under way, by name: however many new connections ask at once
    /// (a burst at start, or when the minute runs out under load), one thread asks the resolver.
    private let waiting = Mutex<[UpstreamKey: [Waiter]]>([:])
    private let lookUp: LookUp

    /// `lookUp` is `getaddrinfo` (tests put a resolver of their own in its place).
    init(lookUp: @escaping LookUp = ResolvedAddresses.systemLookUp) {
        self.lookUp = lookUp
    }

    /// The addresses of `key.host` in the resolver's order (at least one), on `loop` (the caller's)
    /// when it returns.
    func addresses(of key: UpstreamKey, loop: EventLoop) async throws(UpstreamError) -> [SocketAddress] {
        let literal = key.host.hasPrefix("[") && key.host.hasSuffix("]") ? String(key.host.dropFirst().dropLast()) : key.host
        if let numeric = SocketAddress(ip: literal, port: key.port) { return [numeric] }
        let now = EventLoop.monotonicNow()
        if let entry = known.withLock({ $0[key] }), now &- entry.resolvedAt < Self.lifetimeNanoseconds {
            return entry.addresses
        }
        let resolved: Result<[SocketAddress], UpstreamError> = await withUnsafeContinuation { continuation in
            let first = waiting.withLock { waiting -> Bool in
                let first = waiting[key] == nil
                waiting[key, default: []].append(continuation)
                return first
            }
            guard first else { return }
            let started = DetachedThread.start(name: "gatehouse-resolve") { [self] in
                let result = lookUp(key.host, key.port)
                if case .success(let addresses) = result {
                    known.withLock { $0[key] = (addresses, EventLoop.monotonicNow()) }
                }
                finish(key, with: result)
            }
            if !started { finish(key, with: .failure(.connectFailed("no thread to resolve \(key.host)"))) }
        }
        await loop.hop()
        return try resolved.get()
    }

    /// Resumes every caller waiting for `key` with `result`.
    private func finish(_ key: UpstreamKey, with result: Result<[SocketAddress], UpstreamError>) {
        for waiter in waiting.withLock({ $0.removeValue(forKey: key) ?? [] }) { waiter.resume(returning: result) }
    }

    /// How many callers wait for a lookup of `key` (tests).
    func waitingCount(for key: UpstreamKey) -> Int { waiting.withLock { $0[key]?.count ?? 0 } }

    /// Takes `addresses` as looked up for `key` at `resolvedAt` (tests: a name no resolver knows).
    func remember(_ addresses: [SocketAddress], for key: UpstreamKey, resolvedAt: UInt64 = EventLoop.monotonicNow()) {
        known.withLock { $0[key] = (addresses, resolvedAt) }
    }

    static func systemLookUp(host: String, port: Int) -> Result<[SocketAddress], UpstreamError> {
        do {
            let addresses = try SocketAddress.resolve(host: host, port: port)
            guard !addresses.isEmpty else { return .failure(.connectFailed("cannot resolve \(host)")) }
            return .success(addresses)
        } catch {
            return .failure(.connectFailed("cannot resolve \(host): \(error)"))
        }
    }
}
