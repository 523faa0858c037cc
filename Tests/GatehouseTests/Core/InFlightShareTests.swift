import Testing
@testable import GatehouseCore

/// One client may not hold more than its share of a busy route's in-flight bound (32 unread large
/// answers from one client filled a bound of 64 and refused every other caller).
@Suite("Route admission: a client's share of the in-flight bound")
struct InFlightShareTests {
    @Test("one client stops at its share once the route is busy; others still get in")
    func oneClientCannotFillTheBound() {
        let count = InFlightCount()
        let hog = AdmissionClient.address("203.0.113.7")
        var held = 0
        for _ in 0..<64 where count.enter(limit: 64, client: hog) { held += 1 }
        // A quarter of the bound is free for anyone; past it, an eighth per client.
        #expect(held == 16)
        var others = 0
        for index in 0..<64 where count.enter(limit: 64, client: AdmissionClient.address("198.51.100.\(index)")) {
            others += 1
        }
        #expect(others == 48, "every slot the hog did not take")
        #expect(count.current == 64)
    }

    @Test("leaving gives the client's slot back")
    func leaveReturnsTheShare() {
        let count = InFlightCount()
        let client = AdmissionClient.address("::1")
        #expect(count.enter(limit: 8, client: client))
        #expect(count.enter(limit: 8, client: client))
        #expect(!count.enter(limit: 8, client: client), "busy (2 of 8) and past a share of 1")
        count.leave(client: client)
        #expect(count.enter(limit: 8, client: client))
        count.leave(client: client)
        count.leave(client: client)
        #expect(count.current == 0)
    }

    @Test("a bound of one still admits one call (the share never drops below one)")
    func tinyBound() {
        let count = InFlightCount()
        #expect(count.enter(limit: 1, client: 1))
        #expect(!count.enter(limit: 1, client: 2))
        count.leave(client: 1)
        #expect(count.enter(limit: 1, client: 2))
    }
}
