import Synchronization
import Testing
@testable import Gatehouse

@Suite("SingleFlight: one piece of work per key at a time")
struct SingleFlightTests {
    /// Work that waits until released, counting how often it ran.
    final class Gate: Sendable {
        let runs = Atomic<Int>(0)
        let open = Atomic<Bool>(false)

        func work(_ value: Int) async -> Int {
            runs.add(1, ordering: .relaxed)
            while !open.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(5)) }
            return value
        }
    }

    @Test("Callers of one key while its work runs share it; another key runs its own")
    func shared() async {
        let flight = SingleFlight<String, Int>()
        let gate = Gate()
        async let a = flight.run("a") { await gate.work(1) }
        while flight.count == 0 { await Task.yield() }
        async let b = flight.run("a") { await gate.work(2) }
        async let c = flight.run("a") { await gate.work(3) }
        async let other = flight.run("b") { 7 }
        #expect(await other == 7)
        try? await Task.sleep(for: .milliseconds(50))
        gate.open.store(true, ordering: .releasing)
        let values = await [a, b, c]
        #expect(values == [1, 1, 1])
        #expect(gate.runs.load(ordering: .relaxed) == 1)
        #expect(flight.count == 0)
    }

    @Test("A caller with another tag does not join: it runs alone, and the flight stays the first caller's")
    func otherTag() async {
        let flight = SingleFlight<String, Int>()
        let gate = Gate()
        async let first = flight.run("a", tag: 1) { await gate.work(1) }
        while flight.count == 0 { await Task.yield() }
        let later = await flight.run("a", tag: 2) { 2 }
        #expect(later == 2)
        gate.open.store(true, ordering: .releasing)
        #expect(await first == 1)
    }

    @Test("After a flight ends, the next caller starts a new one")
    func sequential() async {
        let flight = SingleFlight<String, Int>()
        let runs = Atomic<Int>(0)
        for expected in 1...3 {
            let value = await flight.run("a") { runs.add(1, ordering: .relaxed).newValue }
            #expect(value == expected)
        }
        #expect(flight.count == 0)
    }

    @Test("A cancelled leader does not cancel the work its waiters share")
    func cancelledLeader() async {
        let flight = SingleFlight<String, Bool>()
        let gate = Gate()
        // The work reports whether it saw a cancellation.
        let leader = Task { await flight.run("a") { _ = await gate.work(0); return Task.isCancelled } }
        while flight.count == 0 { await Task.yield() }
        async let waiter = flight.run("a") { true }
        try? await Task.sleep(for: .milliseconds(20))
        leader.cancel()
        try? await Task.sleep(for: .milliseconds(20))
        gate.open.store(true, ordering: .releasing)
        #expect(await waiter == false, "the waiter got the work's own value, not a cancelled one")
        #expect(await leader.value == false)
        #expect(gate.runs.load(ordering: .relaxed) == 1)
    }
}
