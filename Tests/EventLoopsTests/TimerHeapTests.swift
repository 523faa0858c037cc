import Testing
@testable import EventLoops

/// The loop's timers: the next deadline skips cancelled timers, also when the one it last reported
/// is cancelled or a sooner one is scheduled after it (the next deadline is remembered between turns).
@Suite("TimerHeap")
struct TimerHeapTests {
    @Test("the next deadline follows scheduling, cancelling and running timers")
    func nextDeadline() {
        var timers = TimerHeap()
        #expect(timers.nextDeadline() == nil)
        var ran: [String] = []
        let a = timers.schedule(deadline: 10) { ran.append("a") }
        _ = timers.schedule(deadline: 20) { ran.append("b") }
        #expect(timers.nextDeadline() == 10)
        #expect(timers.nextDeadline() == 10)
        timers.cancel(a)
        #expect(timers.nextDeadline() == 20)
        let c = timers.schedule(deadline: 5) { ran.append("c") }
        #expect(timers.nextDeadline() == 5)
        timers.cancel(c)
        #expect(timers.nextDeadline() == 20)
        _ = timers.schedule(deadline: 15) { ran.append("d") }
        #expect(timers.nextDeadline() == 15)
        for body in timers.takeDue(now: 16) { body() }
        #expect(ran == ["d"])
        #expect(timers.nextDeadline() == 20)
        for body in timers.takeDue(now: 25) { body() }
        #expect(ran == ["d", "b"])
        #expect(timers.nextDeadline() == nil)
        // A cancelled timer never runs, even when its deadline passes while it is the known next one.
        let e = timers.schedule(deadline: 30) { ran.append("e") }
        #expect(timers.nextDeadline() == 30)
        timers.cancel(e)
        #expect(timers.takeDue(now: 40).isEmpty && timers.nextDeadline() == nil)
    }
}
