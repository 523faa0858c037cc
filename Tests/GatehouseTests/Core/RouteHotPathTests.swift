import Testing
@testable import GatehouseCore

/// The byte-level prefix check that routing runs on every request, and the shared storage of route
/// copies: both must keep the exact meaning of the route table.
@Suite("Route matching on the hot path")
struct RouteHotPathTests {
    @Test("whole segments only, bytes compared exactly",
          arguments: [("/api", true), ("/api/", true), ("/api/x/y", true), ("/apix", false), ("/ap", false),
                      ("/API/x", false), ("", false), ("/", false), ("/api%2Fx", false), ("/v2/orders/1", true),
                      ("/v2/order", false)])
    func segmentPrefix(_ path: String, _ covered: Bool) throws {
        let (routes, errors) = UpstreamRoute.parseList("/api=http://127.0.0.1:9000,/v2/orders=http://127.0.0.1:9001/o")
        try #require(errors.isEmpty)
        let table = RouteTable(routes)
        #expect(table.covers(path: path[...]) == covered)
        #expect((table.match(path: path[...]) != nil) == covered)
        // A Substring cut out of a longer target (the request head's path) behaves the same.
        let target = path + "?q=/api"
        let cut = target[..<target.utf8.index(target.utf8.startIndex, offsetBy: path.utf8.count)]
        #expect(table.covers(path: cut) == covered)
    }

    @Test("a changed copy of a route leaves the original untouched (value semantics)")
    func copyOnWrite() throws {
        let (routes, errors) = UpstreamRoute.parseList("/api=http://127.0.0.1:9000/v1;auth=none")
        try #require(errors.isEmpty)
        let original = routes[0]
        var copy = original
        #expect(copy == original)
        copy.prefix = "/other"
        copy.auth = .user
        copy.replacementPath = nil
        #expect(original.prefix == "/api")
        #expect(original.auth == .none)
        #expect(original.replacementPath == "/v1")
        #expect(copy.prefix == "/other")
        #expect(copy != original)
        var same = original
        same.prefix = "/api"
        #expect(same == original)
    }
}
