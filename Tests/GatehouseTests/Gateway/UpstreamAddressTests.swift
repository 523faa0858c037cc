import Dispatch
import EventLoops
@testable import HTTPClient
import Synchronization
import Testing
import TestSupport

/// How the upstream client finds a host (`ResolvedAddresses`, `UpstreamClient.connect`): every
/// address in the resolver's order, and names looked up again once their minute is over.
@Suite("Upstream client: a host's addresses", .enabled(if: LocalTestServer.pythonAvailable), .serialized)
struct UpstreamAddressTests {
    private static let host = "upstream.invalid"

    /// Sends `GET /echo` to `host:port` on the test loop; the answer's status, or the error.
    private static func get(_ client: UpstreamClient, port: Int) async -> Result<Int, UpstreamError> {
        await TLSTestLoop.run {
            do throws(UpstreamError) {
                let response = try await client.send(UpstreamRequest(host: host, port: port, method: "GET", target: "/echo",
                                                                     headers: [:]), body: nil)
                while try await response.nextBodyPiece() != nil {}
                return .success(response.head.status)
            } catch {
                return .failure(error)
            }
        }
    }

    @Test("An address that refuses makes way for the next one")
    func nextAddress() async throws {
        let server = try await offPool { try LocalTestServer() }
        defer { server.stop() }
        let refusing = try PortReservation()
        let client = UpstreamClient()
        let addresses = [try #require(SocketAddress(ip: "127.0.0.1", port: refusing.port)),
                         try #require(SocketAddress(ip: "127.0.0.1", port: server.port))]
        client.addresses.remember(addresses, for: UpstreamKey(host: Self.host, port: server.port))
        #expect(try await Self.get(client, port: server.port).get() == 200)
        // Only the refusing address (a client of its own: nothing pooled): the refusal is the answer.
        let refusedClient = UpstreamClient()
        refusedClient.addresses.remember([addresses[0]], for: UpstreamKey(host: Self.host, port: server.port))
        let refused = await Self.get(refusedClient, port: server.port)
        guard case .failure(.connectFailed) = refused else {
            Issue.record("expected connectFailed, got \(refused)")
            return
        }
    }

    @Test("Callers asking for the same name while it is looked up share one lookup")
    func oneLookupForConcurrentCallers() async throws {
        final class Calls: Sendable { let count = Atomic<Int>(0) }
        let calls = Calls()
        let release = DispatchSemaphore(value: 0)
        let address = try #require(SocketAddress(ip: "127.0.0.1", port: 9))
        let resolver = ResolvedAddresses { _, _ in
            calls.count.add(1, ordering: .relaxed)
            release.wait()
            return .success([address])
        }
        let key = UpstreamKey(host: "shared.invalid", port: 9)
        let callers = 8
        async let answers: [[SocketAddress]?] = withTaskGroup(of: [SocketAddress]?.self) { group in
            for _ in 0..<callers {
                group.addTask { await TLSTestLoop.run { try? await resolver.addresses(of: key, loop: TLSTestLoop.loop) } }
            }
            var all: [[SocketAddress]?] = []
            for await answer in group { all.append(answer) }
            return all
        }
        // Every caller is waiting before the one lookup answers (bounded: the lookup is released
        // after 10 s whatever happens, so a failure cannot hang the suite).
        let deadline = ContinuousClock.now + .seconds(10)
        while resolver.waitingCount(for: key) < callers && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(resolver.waitingCount(for: key) == callers)
        release.signal()
        let all = await answers
        // The resolver's one answer (a single address) reached every caller.
        #expect(all.count == callers && all.allSatisfy { $0?.count == 1 })
        #expect(calls.count.load(ordering: .relaxed) == 1)
        // Kept: the next caller does not ask the resolver.
        #expect(await TLSTestLoop.run { try? await resolver.addresses(of: key, loop: TLSTestLoop.loop) }?.count == 1)
        #expect(calls.count.load(ordering: .relaxed) == 1)
    }

    @Test("A name is looked up again once its addresses are a minute old")
    func lifetime() async throws {
        let server = try await offPool { try LocalTestServer() }
        defer { server.stop() }
        let key = UpstreamKey(host: Self.host, port: server.port)
        let address = try #require(SocketAddress(ip: "127.0.0.1", port: server.port))
        let now = EventLoop.monotonicNow()
        let fresh = UpstreamClient()
        fresh.addresses.remember([address], for: key, resolvedAt: now - ResolvedAddresses.lifetimeNanoseconds / 2)
        #expect(try await Self.get(fresh, port: server.port).get() == 200)
        // Expired (a client of its own: nothing pooled): the resolver is asked, and `.invalid`
        // names never resolve (RFC 6761 §6.4).
        let expired = UpstreamClient()
        expired.addresses.remember([address], for: key, resolvedAt: now - ResolvedAddresses.lifetimeNanoseconds - 1)
        let answer = await Self.get(expired, port: server.port)
        guard case .failure(.connectFailed(let why)) = answer, why.contains("cannot resolve") else {
            Issue.record("expected a failed lookup, got \(answer)")
            return
        }
    }
}
