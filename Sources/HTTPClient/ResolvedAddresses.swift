import EventLoops
import Synchronization

/// Upstream addresses by host name, each kept for `lifetimeNanoseconds` (as libcurl's DNS cache did):
/// an upstream or provider that moves is followed within a minute, and a busy one costs one lookup
/// a minute at most (only new connections ask; pooled ones never do). `getaddrinfo` blocks, so it
/// runs on a short-lived thread of its own ("gatehouse-resolve"), never on a loop: a slow resolver
/// must not stall every connection of the loop. IP literals are never looked up.
final class ResolvedAddresses: Sendable {
    static let lifetimeNanoseconds: UInt64 = 60_000_000_000

    private let known = Mutex<[UpstreamKey: (addresses: [SocketAddress], resolvedAt: UInt64)]>([:])

    /// The addresses of `key.host` in the resolver's order (at least one), on `loop` (the caller's)
    /// when it returns.
    func addresses(of key: UpstreamKey, loop: EventLoop) async throws(UpstreamError) -> [SocketAddress] {
        let literal = key.host.hasPrefix("[") && key.host.hasSuffix("]") ? String(key.host.dropFirst().dropLast()) : key.host
        if let numeric = SocketAddress(ip: literal, port: key.port) { return [numeric] }
        let now = EventLoop.monotonicNow()
        if let entry = known.withLock({ $0[key] }), now &- entry.resolvedAt < Self.lifetimeNanoseconds {
            return entry.addresses
        }
        let host = key.host, port = key.port
        let resolved: Result<[SocketAddress], UpstreamError> = await withUnsafeContinuation { continuation in
            let started = DetachedThread.start(name: "gatehouse-resolve") {
                continuation.resume(returning: Self.lookUp(host: host, port: port))
            }
            if !started { continuation.resume(returning: .failure(.connectFailed("no thread to resolve \(host)"))) }
        }
        await loop.hop()
        let addresses = try resolved.get()
        known.withLock { $0[key] = (addresses, EventLoop.monotonicNow()) }
        return addresses
    }

    /// Takes `addresses` as looked up for `key` at `resolvedAt` (tests: a name no resolver knows).
    func remember(_ addresses: [SocketAddress], for key: UpstreamKey, resolvedAt: UInt64 = EventLoop.monotonicNow()) {
        known.withLock { $0[key] = (addresses, resolvedAt) }
    }

    private static func lookUp(host: String, port: Int) -> Result<[SocketAddress], UpstreamError> {
        do {
            let addresses = try SocketAddress.resolve(host: host, port: port)
            guard !addresses.isEmpty else { return .failure(.connectFailed("cannot resolve \(host)")) }
            return .success(addresses)
        } catch {
            return .failure(.connectFailed("cannot resolve \(host): \(error)"))
        }
    }
}
