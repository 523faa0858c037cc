import Testing
@testable import GatehouseCore

private let nested = "/api=http://up,/api/admin=http://up/api/admin;providers=corp,/api/pay=http://up/api/pay;max_age=300"

private func outcome(_ path: String, routes: String = nested) throws -> String? {
    let (list, errors) = UpstreamRoute.parseList(routes)
    try #require(errors.isEmpty, "\(errors)")
    switch RouteTable(list).match(path: path[...]) {
    case .forward(let route, let upstreamPath)?: return route.prefix + " " + upstreamPath
    case .refused?: return "REFUSED"
    case nil: return nil
    }
}

/// SPEC "Routing and header names cannot be re-spelled": a nested route's policy is never lifted
/// by spelling its prefix another way than the table does.
@Suite("Route matching on the canonical path")
struct RouteRespellingTests {
    @Test("escapes of unreserved characters are decoded: matched to the route they name, forwarded decoded",
          arguments: [("/api/%61dmin/users", "/api/admin /api/admin/users"),
                      ("/api/p%61y/charge", "/api/pay /api/pay/charge"),
                      ("/api/%70%61%79", "/api/pay /api/pay"),
                      ("/%61pi/x", "/api /api/x"),
                      ("/api/a%7Eb%2d", "/api /api/a~b-"),
                      ("/api/x%2fy", "REFUSED")])
    func unreservedEscapes(path: String, expected: String) throws {
        #expect(try outcome(path) == expected)
    }

    @Test("other escapes stay escaped, in upper-case hex", arguments: [
        ("/api/a%20b", "/api /api/a%20b"), ("/api/a%c3%a9", "/api /api/a%C3%A9"), ("/api/q%3f", "/api /api/q%3F"),
    ])
    func reservedEscapes(path: String, expected: String) throws {
        #expect(try outcome(path) == expected)
    }

    @Test("a path a lenient server reads as a nested prefix is refused", arguments: [
        "/api//admin/users", "/api///admin", "/api/admin;x/users", "/api/admin%3bx/users", "/api/Admin/users",
        "/api/ADMIN", "/api/PAY/charge", "/api//pay", "/api/pay;v=1", "/api/%zz/admin", "/api/%6",
    ])
    func refused(path: String) throws {
        #expect(try outcome(path) == "REFUSED")
    }

    @Test("re-spellings that name no other route still pass, as before", arguments: [
        ("/api/users;jsessionid=1", "/api /api/users;jsessionid=1"),
        ("/api/Users/Alice", "/api /api/Users/Alice"),
        ("/api/items//7", "/api /api/items//7"),
        ("/api/admin/Users", "/api/admin /api/admin/Users"),
        ("/api/admin//x", "/api/admin /api/admin//x"),
        ("/api/admin/x;y", "/api/admin /api/admin/x;y"),
    ])
    func unchanged(path: String, expected: String) throws {
        #expect(try outcome(path) == expected)
    }

    @Test("paths under no route as spelled are never forwarded (the static files answer)",
          arguments: ["/apix", "/Apix/admin", "/static/%61", "/", "/a//b", "/API/admin/users", "/Api/x", "/api;x/y"])
    func unrouted(path: String) throws {
        #expect(try outcome(path) == nil)
    }

    @Test("dot segments hidden by escapes are still refused", arguments: ["/api/%2e%2e/admin", "/api/admin/%2E/x", "/api/.%2e"])
    func dots(path: String) throws {
        #expect(try outcome(path) == "REFUSED")
    }

    @Test("a replacement path is joined to the canonical rest")
    func replacement() throws {
        #expect(try outcome("/api/%61b", routes: "/api=http://up/v1") == "/api /v1/ab")
    }
}
