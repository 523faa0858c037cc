import EventLoops
import Logging
import Synchronization

/// The open WebSockets of this process, per event loop, and the rules that end them: the idle
/// timeout (`GATEHOUSE_WEBSOCKET_IDLE`), the end of their session, and server shutdown.
///
/// A session can end in this process (logout, back-channel logout, a refused refresh, expiry:
/// `SessionCache` tells us at once) or in another one (`gatehouse sessions revoke`, a second
/// instance): each loop therefore also checks the sessions of its sockets every
/// `sessionCheckInterval` (2 s) through the session cache (at most 0.5 s stale), so a socket
/// outlives its session by under 3 s. A token refresh changes the session, not its life: sockets
/// stay open.
public final class WebSocketTunnels: Sendable {
    static let sessionCheckIntervalNanoseconds: UInt64 = 2_000_000_000
    static let sweepIntervalNanoseconds: UInt64 = 500_000_000

    private let loops = Mutex<[Int: LoopTunnels]>([:])
    let idleNanoseconds: UInt64
    private let sessionIsLive: @Sendable (String) async -> Bool
    let logger: Logger

    /// `sessionIsLive` answers whether a session id hash still names a live session (true when the
    /// store cannot tell: an outage must not close every socket).
    init(idleSeconds: Int, logger: Logger, sessionIsLive: @escaping @Sendable (String) async -> Bool) {
        let (nanos, overflow) = UInt64(max(1, idleSeconds)).multipliedReportingOverflow(by: 1_000_000_000)
        idleNanoseconds = overflow ? .max : nanos
        self.logger = logger
        self.sessionIsLive = sessionIsLive
    }

    /// Open WebSockets in this process.
    public var count: Int {
        loops.withLock { $0.values.reduce(0) { $0 + $1.openCount.load(ordering: .relaxed) } }
    }

    /// Starts relaying between the browser's and the upstream's endpoints (on the caller's loop).
    func open(browser: any TunnelEndpoint, upstream: any TunnelEndpoint, sessionIDHash: String?, loop: EventLoop) {
        let tunnels = loopTunnels(loop)
        let tunnel = WebSocketTunnel(browser: browser, upstream: upstream, sessionIDHash: sessionIDHash,
                                     loop: loop, scratch: tunnels.scratch, owner: tunnels)
        tunnels.add(tunnel)
        tunnel.start()
    }

    /// A session ended in this process: close its sockets now. nil means "some sessions, which is
    /// not known" (back-channel logout by `sid`/`sub`): every loop checks its sockets' sessions now.
    func sessionEnded(idHash: String?) {
        for tunnels in loops.withLock({ Array($0.values) }) {
            tunnels.loop.execute { tunnels.sessionEnded(idHash: idHash) }
        }
    }

    func isLive(_ idHash: String) async -> Bool { await sessionIsLive(idHash) }

    private func loopTunnels(_ loop: EventLoop) -> LoopTunnels {
        loops.withLock { loops in
            if let known = loops[loop.index] { return known }
            let created = LoopTunnels(loop: loop, registry: self)
            loops[loop.index] = created
            return created
        }
    }
}

/// The WebSockets of one event loop; only touched on that loop (the count is read anywhere).
final class LoopTunnels: @unchecked Sendable {
    let loop: EventLoop
    let scratch = TunnelScratch()
    let openCount = Atomic<Int>(0)
    private unowned let registry: WebSocketTunnels
    private var tunnels: [ObjectIdentifier: WebSocketTunnel] = [:]
    private var sweeping = false
    private var lastSessionCheck: UInt64 = 0
    private var checkingSessions = false

    init(loop: EventLoop, registry: WebSocketTunnels) {
        self.loop = loop
        self.registry = registry
    }

    func add(_ tunnel: WebSocketTunnel) {
        tunnels[ObjectIdentifier(tunnel)] = tunnel
        openCount.store(tunnels.count, ordering: .relaxed)
        if !sweeping {
            sweeping = true
            lastSessionCheck = loop.now
            scheduleSweep()
        }
    }

    func removed(_ tunnel: WebSocketTunnel) {
        tunnels[ObjectIdentifier(tunnel)] = nil
        openCount.store(tunnels.count, ordering: .relaxed)
    }

    /// One timer per loop (not per socket): idle sockets every half second, sessions every 2 s.
    /// It stops when the loop has no socket left.
    private func scheduleSweep() {
        loop.scheduleTimer(afterNanoseconds: WebSocketTunnels.sweepIntervalNanoseconds) { [weak self] in
            guard let self else { return }
            self.sweep(now: self.loop.now)
            if self.tunnels.isEmpty { self.sweeping = false } else { self.scheduleSweep() }
        }
    }

    private func sweep(now: UInt64) {
        let idle = registry.idleNanoseconds
        for tunnel in Array(tunnels.values) where now > tunnel.lastActivity && now - tunnel.lastActivity >= idle {
            registry.logger.info("websocket closed: idle timeout")
            tunnel.end(.goingAway, reason: "idle timeout")
        }
        if now - lastSessionCheck >= WebSocketTunnels.sessionCheckIntervalNanoseconds {
            lastSessionCheck = now
            checkSessions()
        }
    }

    /// Ends the sockets whose session is gone, looking each session up once. The lookups may reach
    /// the store, which is called off the loop: they run in a task on this loop while the loop goes
    /// on; at most one check is under way per loop.
    private func checkSessions() {
        guard !checkingSessions else { return }
        var idHashes = Set<String>()
        for tunnel in tunnels.values { if let idHash = tunnel.sessionIDHash { idHashes.insert(idHash) } }
        guard !idHashes.isEmpty else { return }
        checkingSessions = true
        Task(executorPreference: loop) { [self] in await endSocketsOfEndedSessions(idHashes) }
    }

    private func endSocketsOfEndedSessions(_ idHashes: Set<String>) async {
        var ended = Set<String>()
        for idHash in idHashes {
            let live = await registry.isLive(idHash)
            if !live { ended.insert(idHash) }
        }
        checkingSessions = false
        for tunnel in Array(tunnels.values) {
            guard let idHash = tunnel.sessionIDHash, ended.contains(idHash) else { continue }
            registry.logger.info("websocket closed: its session ended")
            tunnel.end(.policyViolation, reason: "session ended")
        }
    }

    func sessionEnded(idHash: String?) {
        guard let idHash else { return checkSessions() }
        for tunnel in Array(tunnels.values) where tunnel.sessionIDHash == idHash {
            registry.logger.info("websocket closed: its session ended")
            tunnel.end(.policyViolation, reason: "session ended")
        }
    }
}

/// One proxied WebSocket: the byte tunnel, the frame boundaries of both directions (so the gateway
/// can add a close frame of its own), and the session it belongs to.
final class WebSocketTunnel: ByteTunnelDelegate {
    let sessionIDHash: String?
    private let tunnel: ByteTunnel
    private unowned let owner: LoopTunnels
    private var towardUpstream = WebSocketFrameTracker()
    private var towardBrowser = WebSocketFrameTracker()

    init(browser: any TunnelEndpoint, upstream: any TunnelEndpoint, sessionIDHash: String?, loop: EventLoop,
         scratch: TunnelScratch, owner: LoopTunnels) {
        self.sessionIDHash = sessionIDHash
        self.owner = owner
        tunnel = ByteTunnel(first: browser, second: upstream, loop: loop, scratch: scratch)
        tunnel.delegate = self
    }

    var lastActivity: UInt64 { tunnel.lastActivity }

    func start() { tunnel.start() }

    /// Closes both sides, each with a close frame when its stream is between frames.
    func end(_ code: WebSocketFrameTracker.CloseCode, reason: String) {
        let toBrowser = towardBrowser.atFrameBoundary
            ? WebSocketFrameTracker.closeFrame(code, reason: reason, masked: false) : []
        let toUpstream = towardUpstream.atFrameBoundary
            ? WebSocketFrameTracker.closeFrame(code, reason: reason, masked: true) : []
        tunnel.close(sendingToFirst: toBrowser, sendingToSecond: toUpstream)
    }

    // MARK: ByteTunnelDelegate

    func tunnel(_ tunnel: ByteTunnel, carried bytes: UnsafeRawBufferPointer, _ direction: ByteTunnel.Direction) {
        if direction == .firstToSecond { towardUpstream.consume(bytes) } else { towardBrowser.consume(bytes) }
    }

    func tunnelEndRequested(_ tunnel: ByteTunnel) {
        end(.goingAway, reason: "server shutting down")
    }

    func tunnelClosed(_ tunnel: ByteTunnel) {
        owner.removed(self)
    }
}
