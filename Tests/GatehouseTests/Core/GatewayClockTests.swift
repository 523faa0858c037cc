import Foundation
import GatehouseSessions
import GatehouseTime
import Testing
import TestSupport
@testable import Gatehouse

/// Issue 11, item 5: one injected clock. The system clock reads the operating system; the manual one
/// moves only when told, and what the gateway measures (the session cache's age) follows it.
@Suite("Time: GatewayClock, SystemClock, ManualClock")
struct GatewayClockTests {
    @Test("SystemClock's wall time lies between two Date() readings taken around it")
    func systemWallTime() {
        let before = Int64(Date().timeIntervalSince1970.rounded(.down))
        let seconds = SystemClock().unixSeconds()
        let after = Int64(Date().timeIntervalSince1970.rounded(.down))
        #expect(before <= seconds && seconds <= after)
    }

    @Test("SystemClock's monotonic reading never goes backwards")
    func systemMonotonic() {
        let clock = SystemClock()
        var previous = clock.monotonicNanoseconds()
        for _ in 0..<1_000 {
            let next = clock.monotonicNanoseconds()
            #expect(next >= previous)
            previous = next
        }
    }

    @Test("unixSeconds rounds down, also before 1970", arguments: [
        (Int64(-1), 0.0, Int64(-1)), (-1, 0.5, -1), (-1, 1.0, 0), (0, 0.999, 0), (1_750_000_000, 2.5, 1_750_000_002),
    ])
    func roundsDown(start: Int64, advance: Double, expected: Int64) {
        let clock = ManualClock(unixSeconds: start)
        clock.advance(seconds: advance)
        #expect(clock.unixSeconds() == expected)
    }

    @Test("ManualClock moves wall and monotonic time together, only when advanced")
    func manualClockMovesTogether() {
        let clock = ManualClock(unixSeconds: 1_000)
        let monotonic = clock.monotonicNanoseconds()
        #expect(clock.unixSeconds() == 1_000 && clock.monotonicNanoseconds() == monotonic)
        clock.advance(seconds: 1.5)
        #expect(clock.unixNanoseconds() == 1_001_500_000_000)
        #expect(clock.monotonicNanoseconds() - monotonic == 1_500_000_000)
        clock.advance(seconds: -10)
        #expect(clock.unixNanoseconds() == 1_001_500_000_000, "time never moves back")
        #expect(clock.now() == Date(timeIntervalSince1970: 1_001.5))
    }

    @Test("The session cache ages its entries on the injected clock, not on the event loop's")
    func sessionCacheAgesOnTheInjectedClock() async throws {
        let clock = ManualClock()
        let now = clock.unixSeconds()
        let store = InMemorySessionStore()
        let sessions = try SessionCacheTests.cache(over: store, clock: clock)
        let session = try store.createSession(.make(now: now))
        #expect(try await sessions.resolve(idHash: session.idHash, now: now) != nil)
        _ = try store.deleteSession(idHash: session.idHash)
        clock.advance(seconds: 0.4)
        #expect(try await sessions.resolve(idHash: session.idHash, now: now) != nil, "younger than 0.5 s: cached")
        clock.advance(seconds: 0.2)
        #expect(try await sessions.resolve(idHash: session.idHash, now: now) == nil, "older than 0.5 s: read again")
    }
}

@Suite("Time: unit conversions")
struct TimeUnitsTests {
    @Test("Seconds and durations to nanoseconds: exact, negative as zero, overflow saturated")
    func nanoseconds() {
        #expect(TimeUnits.nanoseconds(seconds: 30) == 30_000_000_000)
        #expect(TimeUnits.nanoseconds(seconds: -5) == 0)
        #expect(TimeUnits.nanoseconds(seconds: .max) == .max)
        #expect(TimeUnits.nanoseconds(.seconds(25)) == 25_000_000_000)
        #expect(TimeUnits.nanoseconds(.milliseconds(1_500)) == 1_500_000_000)
        #expect(TimeUnits.nanoseconds(.seconds(-1)) == 0)
        #expect(TimeUnits.nanoseconds(.seconds(Int64.max)) == .max)
        #expect(TimeUnits.seconds(.milliseconds(2_500)) == 2.5)
    }
}
