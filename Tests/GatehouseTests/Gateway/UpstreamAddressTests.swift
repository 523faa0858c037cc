import EventLoops
@testable import HTTPClient
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
