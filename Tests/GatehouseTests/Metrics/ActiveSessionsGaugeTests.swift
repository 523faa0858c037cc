import Foundation
import Synchronization
import Testing
@testable import Gatehouse
import TestSupport

/// Issue 10, item 6: `gatehouse_active_sessions` is counted on a thread of its own.
@Suite("Active-session gauge")
struct ActiveSessionsGaugeTests {
    /// Waits (bounded) until `gauge` shows `expected`.
    static func await(_ gauge: ActiveSessionsGauge, _ expected: Int?) async -> Bool {
        await eventually { gauge.value == expected }
    }

    @Test("Counts at start, recounts on a nudge without waiting for the interval, stops for good")
    func startNudgeStop() async throws {
        let gauge = ActiveSessionsGauge()
        #expect(gauge.value == nil, "no value before the first count")
        let sessions = Atomic<Int>(3)
        let counts = Atomic<Int>(0)
        gauge.start(interval: .seconds(3_600)) {
            counts.add(1, ordering: .relaxed)
            return sessions.load(ordering: .relaxed)
        }
        #expect(await Self.await(gauge, 3))
        sessions.store(4, ordering: .relaxed)
        gauge.nudge()
        #expect(await Self.await(gauge, 4))
        gauge.stop()
        let afterStop = counts.load(ordering: .relaxed)
        sessions.store(9, ordering: .relaxed)
        gauge.nudge()
        gauge.start { 99 }
        #expect(counts.load(ordering: .relaxed) == afterStop, "a stopped gauge never counts again")
        #expect(gauge.value == 4)
    }

    @Test("A failing count leaves the gauge without a value (and out of /metrics)")
    func failingCount() async throws {
        struct Unavailable: Error {}
        let metrics = GatewayMetrics()
        metrics.activeSessions.set(5)
        let fail = Atomic<Bool>(false)
        metrics.activeSessions.start(interval: .seconds(3_600)) {
            if fail.load(ordering: .relaxed) { throw Unavailable() }
            return 2
        }
        defer { metrics.activeSessions.stop() }
        #expect(await Self.await(metrics.activeSessions, 2))
        fail.store(true, ordering: .relaxed)
        metrics.loginCompleted()  // a completed login nudges a recount
        #expect(await Self.await(metrics.activeSessions, nil))
        #expect(!metrics.render().contains("gatehouse_active_sessions"))
    }
}
