import Testing
@testable import HTTPServer

/// The connection's deadline rules as a value, without sockets or clocks.
@Suite("Server: connection deadlines")
struct ConnectionDeadlinesTests {
    private static let timeouts = ConnectionDeadlines.Timeouts(head: 10, idle: 60, progress: 30, linger: 2)

    @Test("a fresh connection must send its head in time: 408 once the head deadline passes")
    func headDeadline() {
        var deadlines = ConnectionDeadlines(timeouts: Self.timeouts)
        deadlines.arm(.head, now: 100)
        #expect(deadlines.expiry(now: 109) == .none)
        #expect(deadlines.expiry(now: 110) == .headTimedOut)
    }

    @Test("an idle keep-alive connection switches to the head deadline when request bytes arrive")
    func idleThenHead() {
        var deadlines = ConnectionDeadlines(timeouts: Self.timeouts)
        deadlines.awaitNextRequest(outputPending: false, inputBuffered: false, now: 0)
        #expect(deadlines.kind == .idle)
        #expect(deadlines.expiry(now: 59) == .none)
        deadlines.requestBytesArrived(now: 50)
        #expect(deadlines.kind == .head)
        #expect(deadlines.expiry(now: 59) == .none)
        #expect(deadlines.expiry(now: 60) == .headTimedOut)
        // Later bytes of the same head do not extend it.
        deadlines.requestBytesArrived(now: 58)
        #expect(deadlines.expiry(now: 60) == .headTimedOut)
    }

    @Test("a pipelined request already buffered puts the connection under the head deadline, not idle")
    func pipelinedInput() {
        var deadlines = ConnectionDeadlines(timeouts: Self.timeouts)
        deadlines.awaitNextRequest(outputPending: false, inputBuffered: true, now: 0)
        #expect(deadlines.kind == .head)
    }

    @Test("while an answer is unsent only the send deadline runs; once sent, idle starts")
    func answerOnItsWay() {
        var deadlines = ConnectionDeadlines(timeouts: Self.timeouts)
        deadlines.sendBlocked(moved: false, now: 0)
        deadlines.awaitNextRequest(outputPending: true, inputBuffered: false, now: 5)
        #expect(deadlines.kind == .none)
        #expect(deadlines.expiry(now: 29) == .none)
        deadlines.sendCompleted(awaitingHead: true, inputBuffered: false, now: 20)
        #expect(deadlines.sendDeadline == 0)
        #expect(deadlines.kind == .idle)
        #expect(deadlines.expiry(now: 79) == .none)
        #expect(deadlines.expiry(now: 80) == .close)
    }

    @Test("the send deadline moves only when bytes leave, not when more answers queue")
    func sendProgress() {
        var deadlines = ConnectionDeadlines(timeouts: Self.timeouts)
        deadlines.sendBlocked(moved: false, now: 0)
        #expect(deadlines.sendDeadline == 30)
        deadlines.sendBlocked(moved: false, now: 20)
        #expect(deadlines.sendDeadline == 30)
        deadlines.sendBlocked(moved: true, now: 25)
        #expect(deadlines.sendDeadline == 55)
        #expect(deadlines.expiry(now: 54) == .none)
        #expect(deadlines.expiry(now: 55) == .close)
    }

    @Test("a stalled send closes the connection even while a request deadline is far off")
    func sendBeforeRequestSide() {
        var deadlines = ConnectionDeadlines(timeouts: Self.timeouts)
        deadlines.sendBlocked(moved: false, now: 0)
        deadlines.arm(.head, now: 25)
        #expect(deadlines.expiry(now: 29) == .none)
        #expect(deadlines.expiry(now: 30) == .close)
    }

    @Test("starting a request clears the request side without extending the send side")
    func requestStartKeepsSendDeadline() {
        var deadlines = ConnectionDeadlines(timeouts: Self.timeouts)
        deadlines.sendBlocked(moved: false, now: 0)
        deadlines.arm(.idle, now: 0)
        deadlines.clear()
        #expect(deadlines.kind == .none)
        #expect(deadlines.sendDeadline == 30)
        #expect(deadlines.expiry(now: 30) == .close)
    }

    @Test("a body that stops moving and the linger period both end in a close")
    func progressAndLinger() {
        var deadlines = ConnectionDeadlines(timeouts: Self.timeouts)
        deadlines.arm(.progress, now: 0)
        #expect(deadlines.expiry(now: 29) == .none)
        #expect(deadlines.expiry(now: 30) == .close)
        deadlines.arm(.linger, now: 30)
        #expect(deadlines.expiry(now: 31) == .none)
        #expect(deadlines.expiry(now: 32) == .close)
    }

    @Test("sending completes while a handler works: no request deadline is armed")
    func sentWhileHandling() {
        var deadlines = ConnectionDeadlines(timeouts: Self.timeouts)
        deadlines.sendBlocked(moved: false, now: 0)
        deadlines.sendCompleted(awaitingHead: false, inputBuffered: false, now: 10)
        #expect(deadlines.kind == .none)
        #expect(deadlines.expiry(now: 1_000) == .none)
    }
}
