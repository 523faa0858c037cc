/// Which deadline a connection is under, and what its passing means. A value: the connection feeds
/// it the loop's clock and acts on `expiry(now:)`, so the rules are tested without sockets.
///
/// Two clocks run side by side. The request side is at most one of: the head deadline (a request
/// must arrive whole in time: the slowloris defence), the idle keep-alive deadline, the body
/// progress deadline (a body being read or drained must keep moving) and the linger period after a
/// final answer. The send side runs while output is unsent and moves only when bytes leave, so a
/// client that pipelines requests but never reads is cut. Starting a request does not extend the
/// time the previous answers had, and answers queued behind do not either.
struct ConnectionDeadlines: Equatable {
    enum Kind: Equatable { case none, head, idle, progress, linger }

    /// What a passed deadline asks of the connection.
    enum Expiry: Equatable {
        case none
        /// No complete head in time: answer `408` if still waiting for one, then close.
        case headTimedOut
        case close
    }

    struct Timeouts: Equatable {
        var head: UInt64
        var idle: UInt64
        var progress: UInt64
        /// How long a connection that sent its final answer reads and discards before closing.
        var linger: UInt64 = 2_000_000_000
    }

    let timeouts: Timeouts
    private(set) var kind: Kind = .none
    /// When the request-side deadline passes (0: none).
    private(set) var deadline: UInt64 = 0
    /// When unsent output must have moved by (0: nothing unsent).
    private(set) var sendDeadline: UInt64 = 0

    init(timeouts: Timeouts) {
        self.timeouts = timeouts
    }

    /// Puts the request side under `kind`, counted from `now` (the loop's clock of this iteration:
    /// deadlines are seconds long, and a clock read per request showed up in the proxy's profile).
    mutating func arm(_ kind: Kind, now: UInt64) {
        self.kind = kind
        switch kind {
        case .none: deadline = 0
        case .head: deadline = now &+ timeouts.head
        case .idle: deadline = now &+ timeouts.idle
        case .progress: deadline = now &+ timeouts.progress
        case .linger: deadline = now &+ timeouts.linger
        }
    }

    /// No request-side deadline (a handler is working, or unsent output governs).
    mutating func clear() { arm(.none, now: 0) }

    /// Bytes of a request arrived on an idle keep-alive connection: from now on the head must
    /// arrive in time.
    mutating func requestBytesArrived(now: UInt64) {
        if kind == .idle { arm(.head, now: now) }
    }

    /// An exchange is over and the connection waits for its next request. While the answer is still
    /// on its way the send side governs (an idle deadline would cut a slow but steady download);
    /// else idle, or head when a pipelined request is already buffered.
    mutating func awaitNextRequest(outputPending: Bool, inputBuffered: Bool, now: UInt64) {
        if outputPending { clear() } else { arm(inputBuffered ? .head : .idle, now: now) }
    }

    /// Output is left unsent because the client is not reading. Only bytes that left (`moved`)
    /// extend the send deadline; new answers queued behind do not.
    mutating func sendBlocked(moved: Bool, now: UInt64) {
        if moved || sendDeadline == 0 { sendDeadline = now &+ timeouts.progress }
    }

    /// All output is sent. A connection waiting for a request with no deadline of its own (its
    /// previous answer was still going out) goes back to idle, or head for buffered input.
    mutating func sendCompleted(awaitingHead: Bool, inputBuffered: Bool, now: UInt64) {
        sendDeadline = 0
        if awaitingHead && kind == .none { arm(inputBuffered ? .head : .idle, now: now) }
    }

    /// What the deadlines ask for at `now`. The send side first: a client that stopped reading is
    /// closed whatever the request side says.
    func expiry(now: UInt64) -> Expiry {
        if sendDeadline != 0 && now >= sendDeadline { return .close }
        guard kind != .none, now >= deadline else { return .none }
        switch kind {
        case .head: return .headTimedOut
        case .idle, .progress, .linger: return .close
        case .none: return .none
        }
    }
}
