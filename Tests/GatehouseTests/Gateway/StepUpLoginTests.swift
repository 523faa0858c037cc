import Foundation
import Testing
import TestSupport

/// A refused step-up login says in its log which claim failed (`login.detail`), as every other
/// callback failure does: an empty detail left operators guessing between `acr` and `auth_time`.
@Suite("Gateway: step-up logins")
struct StepUpLoginTests {
    /// The log line of the failed callback.
    private static func failureLine(_ harness: GatewayHarness) -> String? {
        harness.logLines().last { $0.contains("step_up_not_satisfied") }
    }

    @Test("acr asked for and not given: the log's detail names acr")
    func acrDetail() async throws {
        try await GatewayHarness.with { harness in
            let browser = harness.browser()
            // The development provider never sends `acr`.
            let start = try await browser.beginLogin(query: "acr_values=urn%3Agold")
            let callback = try await browser.answerAtProvider(try #require(start.location))
            let finish = try await browser.finishLogin(callback)
            #expect(finish.status >= 400)
            #expect(browser.sessionCookie == nil)
            let line = try #require(Self.failureLine(harness))
            #expect(line.contains(#""login.detail":"acr missing"#), "\(line)")
        }
    }

    @Test("auth_time older than max_age: the log's detail names auth_time")
    func authTimeDetail() async throws {
        let clock = ManualClock()
        try await GatewayHarness.with(HarnessOptions(clock: clock)) { harness in
            let browser = harness.browser()
            let start = try await browser.beginLogin(query: "max_age=0")
            let callback = try await browser.answerAtProvider(try #require(start.location))
            // The user authenticated 10 s before the callback: past max_age=0 and its skew.
            clock.advance(seconds: 10)
            let finish = try await browser.finishLogin(callback)
            #expect(finish.status >= 400)
            let line = try #require(Self.failureLine(harness))
            #expect(line.contains(#""login.detail":"auth_time older than max_age"#), "\(line)")
        }
    }
}
