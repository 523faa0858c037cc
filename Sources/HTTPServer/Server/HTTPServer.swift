#if canImport(Glibc)
import Glibc
import CLinux
#endif
import Logging
import Synchronization
import EventLoops
import HTTP1

/// A NIO-free HTTP/1.1 server: one epoll event loop per core, each with its own `SO_REUSEPORT`
/// listener, so accepting, parsing, handling and writing a request all happen on one thread.
///
/// For example:
/// ```swift
/// let server = HTTPServer(configuration: config, handler: MyHandler(), logger: logger)
/// try server.start()
/// ```
public final class HTTPServer: @unchecked Sendable {
    public let configuration: HTTPServerConfiguration
    let handler: any HTTPHandler
    let observer: (any HTTPServerObserver)?
    /// `observer?.recordsTraceIDs`, read once.
    let recordsTraceIDs: Bool
    /// `observer?.traceSampling`, read once: set, each request's trace gets a span of its own.
    let traceSampling: TraceSampling?
    let logger: Logger
    /// Headers added to the answers the server itself writes (parse errors, timeouts).
    let defaultHeaders: HTTPHeaders
    public private(set) var loops: [EventLoop] = []
    private(set) var listeners: [Listener] = []
    public private(set) var localPort: Int = 0
    let openConnections = Atomic<Int>(0)
    private let lastRejectLog = Atomic<UInt64>(0)

    public init(configuration: HTTPServerConfiguration, handler: any HTTPHandler,
                observer: (any HTTPServerObserver)? = nil, defaultHeaders: HTTPHeaders = HTTPHeaders(),
                logger: Logger) {
        self.configuration = configuration
        self.handler = handler
        self.observer = observer
        traceSampling = observer?.traceSampling
        recordsTraceIDs = (observer?.recordsTraceIDs ?? false) || traceSampling != nil
        self.defaultHeaders = defaultHeaders
        self.logger = logger
    }

    /// The trace of a request with this head: continued, with a span of this hop's own when spans
    /// are recorded.
    @inline(__always)
    func trace(_ headers: HTTPHeaders) -> TraceParent {
        guard let traceSampling else { return TraceParent.continuing(headers) }
        return TraceParent.continuing(headers, sampling: traceSampling)
    }

    /// Binds the listeners and starts the loops. Throws `SocketError` when the address cannot be bound.
    public func start() throws {
        // A peer that resets a connection must not kill the process through SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        guard let address = SocketAddress(ip: configuration.host, port: configuration.port) else {
            throw SocketError(call: "parse address \(configuration.host)", errno: EINVAL)
        }
        var port = configuration.port
        var fds: [Int32] = []
        // SO_REUSEPORT would let this server silently share a port with another process of the same
        // user (a stale instance, a second `serve`), each answering part of the traffic. A listener
        // bound without it fails with EADDRINUSE while any socket listens there, so one is bound
        // first, alone, and closed before the loops' own listeners take the port.
        if port != 0 {
            close(try Sockets.listen(on: address, reusePort: false))
        }
        do {
            for i in 0..<max(1, configuration.loopCount) {
                let bindAddress = i == 0 ? address : SocketAddress(ip: configuration.host, port: port)!
                let fd = try Sockets.listen(on: bindAddress, reusePort: true)
                fds.append(fd)
                if i == 0 { port = Sockets.localAddress(of: fd)?.port ?? port }
            }
        } catch {
            for fd in fds { close(fd) }
            throw error
        }
        localPort = port
        let cpus = configuration.pinsLoopsToCPUs
            ? CPUAffinity.placement(loops: fds.count, allowed: CPUAffinity.allowedCPUs()) : nil
        let steering = cpus.flatMap(ConnectionSteering.init(loopCPUs:))
        for (i, fd) in fds.enumerated() {
            let loop = try EventLoop(index: i)
            loops.append(loop)
            listeners.append(Listener(fd: fd, loop: loop, server: self, handler: handler.loopHandler(for: loop),
                                      observer: observer?.loopObserver(for: loop), steering: steering))
        }
        // Started once every listener exists: a loop may hand a connection to another's listener.
        for (i, listener) in listeners.enumerated() {
            let loop = listener.loop
            loop.start()
            loop.execute {
                // The loop's first work, before it touches any socket. A loop the system will not
                // keep on its CPU still serves (and is steered to) correctly, only without the locality.
                if let cpu = cpus?[i] {
                    let error = CPUAffinity.pinCurrentThread(to: cpu)
                    if error != 0 {
                        self.logger.warning("cannot keep event loop on its CPU; the scheduler places it",
                                            metadata: ["http.loop": "\(i)", "cpu": "\(cpu)",
                                                       "error": "\(String(cString: strerror(error)))"])
                    }
                }
                do { try loop.registerListener(listener.fd, listener) } catch {
                    self.logger.error("cannot register listener", metadata: ["error": "\(error)"])
                }
                listener.startSweeper()
                if let observer = listener.observer { loop.addEndOfBatchHook { observer.endOfBatch(loop: i) } }
            }
        }
        logger.info("listening", metadata: ["http.address": "\(configuration.host)", "http.port": "\(port)",
                                            "http.loops": "\(loops.count)",
                                            "http.loop_cpus": "\(cpus.map { $0.map(String.init).joined(separator: ",") } ?? "any")"])
    }

    /// Stops accepting, lets in-flight requests finish until the grace period ends, then closes every
    /// connection and stops the loops.
    public func shutdown(graceNanoseconds: UInt64 = 25_000_000_000) async {
        for listener in listeners {
            listener.loop.execute { listener.beginShutdown() }
        }
        let deadline = EventLoop.monotonicNow() &+ graceNanoseconds
        while openConnections.load(ordering: .relaxed) > 0 && EventLoop.monotonicNow() < deadline {
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        for listener in listeners {
            listener.loop.execute { listener.closeAll() }
        }
        try? await Task.sleep(nanoseconds: 20_000_000)
        for loop in loops { loop.stopAndJoin() }
        loops.removeAll()
        listeners.removeAll()
    }

    func noteRejected() {
        observer?.connectionRejected()
        // One log line a second at most: a flood must not turn into a log flood.
        let now = EventLoop.monotonicNow()
        let last = lastRejectLog.load(ordering: .relaxed)
        if now &- last > 1_000_000_000,
           lastRejectLog.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged {
            logger.warning("connection refused: too many open connections",
                           metadata: ["http.max_connections": "\(configuration.maxConnections)"])
        }
    }
}

/// A loop's listening socket and the connections it accepted.
final class Listener: EventLoopSelectable, @unchecked Sendable {
    let fd: Int32
    let loop: EventLoop
    unowned let server: HTTPServer
    /// The server's handler and observer as this loop's connections call them.
    let handler: any HTTPHandler
    let observer: (any HTTPServerObserver)?
    var connections: [ObjectIdentifier: HTTPConnection] = [:]
    /// Sockets handed to tunnels by `HTTPConnection.switchProtocols`, still counted as open.
    private var upgradedSockets: [ObjectIdentifier: any ServerTunnelEndpoint] = [:]
    private var listening = true
    private var requestCounter: UInt64 = 0
    /// Which loop serves a connection this one accepts (loops kept one per CPU), nil otherwise.
    let steering: ConnectionSteering?
    /// Connections this loop serves, upgraded ones included: read by the other loops' steering.
    let load = Atomic<Int>(0)

    init(fd: Int32, loop: EventLoop, server: HTTPServer, handler: any HTTPHandler, observer: (any HTTPServerObserver)?,
         steering: ConnectionSteering? = nil) {
        (self.fd, self.loop, self.server) = (fd, loop, server)
        (self.handler, self.observer, self.steering) = (handler, observer, steering)
    }

    func nextRequestID() -> RequestID {
        requestCounter &+= 1
        return RequestID(loop: loop.index, number: requestCounter)
    }

    func socketReadable() {
        guard listening else { return }
        // Level-triggered: accept a bounded batch, the rest on the next iteration (fairness).
        for _ in 0..<64 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(fd, $0, &length)
                }
            }
            if client < 0 {
                let err = errno
                if err == EAGAIN || err == EWOULDBLOCK { return }
                if err == EINTR || err == ECONNABORTED { continue }
                // EMFILE and friends: the listener is level-triggered, so stop watching it for a
                // moment instead of spinning (and logging) on every loop turn.
                server.logger.warning("accept failed; pausing accepts for 100 ms",
                                      metadata: ["error": "\(SocketError(call: "accept", errno: err))"])
                pauseAccepting()
                return
            }
            let open = server.openConnections.wrappingAdd(1, ordering: .relaxed).newValue
            if open > server.configuration.maxConnections {
                server.openConnections.wrappingSubtract(1, ordering: .relaxed)
                close(client)
                server.noteRejected()
                continue
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            Sockets.setNoDelay(client)
            let peer = SocketAddress(storage: storage, length: length).peerAddress
            if let steering {
                let listeners = server.listeners
                let target = steering.target(incomingCPU: Int(gatehouse_incoming_cpu(client)), acceptingLoop: loop.index,
                                             load: { listeners[$0].load.load(ordering: .relaxed) })
                if target != loop.index {
                    let other = listeners[target]
                    // Counted at once, so the next accepts (on any loop) see it.
                    other.load.wrappingAdd(1, ordering: .relaxed)
                    other.loop.execute { other.adoptHandedOver(client, peer: peer) }
                    continue
                }
            }
            adopt(client, peer: peer)
        }
    }

    /// A connection another loop accepted for this one (already counted in `load`).
    private func adoptHandedOver(_ client: Int32, peer: PeerAddress) {
        guard listening else {
            // Shutting down: not served, as if it had arrived after the listener closed.
            forget(unserved: client)
            return
        }
        adopt(client, peer: peer, inLoad: true)
    }

    /// Serves a connected socket already counted in `openConnections` (and in `load` when `inLoad`):
    /// an accepted one, or in tests one end of a socketpair (the fuzz harness drives the real
    /// connection logic without TCP). Closes it when it cannot be served.
    @discardableResult
    func adopt(_ client: Int32, peer: PeerAddress, inLoad: Bool = false) -> HTTPConnection? {
        if !inLoad { load.wrappingAdd(1, ordering: .relaxed) }
        do { try Sockets.setNonBlocking(client) } catch {
            forget(unserved: client)
            return nil
        }
        let connection = HTTPConnection(fd: client, peer: peer, listener: self)
        if let certificate = server.configuration.tls {
            // No certificate held yet (ACME's first order), or OpenSSL out of memory: not served.
            guard let stream = certificate.context?.accept(client) else {
                forget(unserved: client)
                return nil
            }
            connection.tls = stream
            connection.state = .handshaking
        }
        do {
            try loop.register(client, connection)
        } catch {
            forget(unserved: client)
            return nil
        }
        connections[ObjectIdentifier(connection)] = connection
        observer?.connectionOpened()
        connection.start()
        return connection
    }

    private func forget(unserved client: Int32) {
        load.wrappingSubtract(1, ordering: .relaxed)
        server.openConnections.wrappingSubtract(1, ordering: .relaxed)
        close(client)
    }

    func socketWritable() {}
    func socketHangup() {}

    private func pauseAccepting() {
        loop.deregister(fd)
        loop.scheduleTimer(afterNanoseconds: 100_000_000) { [weak self] in
            guard let self, self.listening else { return }
            try? self.loop.registerListener(self.fd, self)
        }
    }

    func removed(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = nil
        load.wrappingSubtract(1, ordering: .relaxed)
        server.openConnections.wrappingSubtract(1, ordering: .relaxed)
        observer?.connectionClosed()
    }

    /// A connection switched protocols: its socket lives on as `endpoint` (counted until it closes).
    func upgraded(_ connection: HTTPConnection, to endpoint: any ServerTunnelEndpoint) {
        connections[ObjectIdentifier(connection)] = nil
        let key = ObjectIdentifier(endpoint)
        upgradedSockets[key] = endpoint
        endpoint.onClose = { [weak self] in
            guard let self else { return }
            self.upgradedSockets[key] = nil
            self.load.wrappingSubtract(1, ordering: .relaxed)
            self.server.openConnections.wrappingSubtract(1, ordering: .relaxed)
            self.observer?.connectionClosed()
        }
    }

    /// Checks every connection's deadline four times a second: cheaper than a timer per connection,
    /// and precise enough for timeouts measured in seconds. Connections idle since the previous
    /// sweep give their buffers back at the same time.
    /// Bytes released by one sweep above which the heap is trimmed.
    static let trimThreshold = 256 * 1024
    /// Free read buffers kept resident for new connections (per process, 8 KiB each).
    static let residentFreeBuffers = 16

    func startSweeper() {
        loop.scheduleTimer(afterNanoseconds: 250_000_000) { [weak self] in
            guard let self else { return }
            let now = EventLoop.monotonicNow()
            var released = 0
            for connection in Array(self.connections.values) {
                connection.checkDeadline(now: now)
                released += connection.releaseBuffersIfIdle()
            }
            // Buffers of many connections that went idle together lie between live allocations,
            // where `free` keeps them; give their pages back to the system (a heap walk, at most
            // four times a second and only after a large release).
            if released >= Self.trimThreshold { malloc_trim(0) }
            // Read buffers of closed connections: a few stay ready for the next ones.
            BufferSlab.shared.trim(keeping: Self.residentFreeBuffers)
            self.startSweeper()
        }
    }

    func beginShutdown() {
        if listening {
            listening = false
            loop.deregister(fd)
            close(fd)
        }
        for connection in Array(connections.values) { connection.beginShutdown() }
        // Tunnels end themselves (a WebSocket sends its close frames), then close their sockets.
        for endpoint in Array(upgradedSockets.values) { endpoint.requestEnd() }
    }

    func closeAll() {
        for connection in Array(connections.values) { connection.close() }
        for endpoint in Array(upgradedSockets.values) { endpoint.close() }
    }
}
