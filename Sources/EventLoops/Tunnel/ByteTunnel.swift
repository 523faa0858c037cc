/// Relays bytes both ways between two endpoints on one event loop (a proxied WebSocket after its
/// handshake), with bounded buffering per direction.
///
/// Back-pressure, as the server does for pipelined requests: bytes read from one side are written
/// to the other at once; what the other side does not take waits in that direction's buffer, and
/// while the buffer holds `watermark` bytes or more the first side is not read (its kernel buffers
/// fill, then TCP stops its sender). So at most `watermark` + one read (`TunnelScratch.size`) wait
/// in memory per direction, and an idle tunnel holds no buffer at all.
///
/// An end of stream on one side is passed on as a half-close once its bytes are delivered; the
/// tunnel ends when both directions have ended, either side breaks, or its owner calls `close`.
public final class ByteTunnel: TunnelEndpointHandler {
    /// The two directions: from the first endpoint (the browser) to the second (the upstream) and back.
    public enum Direction: Sendable { case firstToSecond, secondToFirst }

    private final class Side {
        let endpoint: any TunnelEndpoint
        var canRead = true
        var canWrite = true
        var inputEnded = false
        var outputShut = false
        init(_ endpoint: any TunnelEndpoint) { self.endpoint = endpoint }
    }

    /// Bytes read from one side that the other has not taken yet.
    private struct Pending {
        var bytes: [UInt8] = []
        var offset = 0
        var count: Int { bytes.count - offset }
        mutating func consume(_ n: Int) {
            offset += n
            if offset == bytes.count {
                // An idle tunnel keeps no buffer: the memory of many open WebSockets stays small.
                bytes = []
                offset = 0
            }
        }
    }

    public let loop: EventLoop
    public let watermark: Int
    private let first: Side
    private let second: Side
    private var toSecond = Pending()
    private var toFirst = Pending()
    private let scratch: TunnelScratch
    private var pumping = false
    public private(set) var closed = false
    /// When bytes last moved (the loop's monotonic clock), for idle timeouts.
    public private(set) var lastActivity: UInt64
    public weak var delegate: (any ByteTunnelDelegate)?

    public init(first: any TunnelEndpoint, second: any TunnelEndpoint, loop: EventLoop, scratch: TunnelScratch,
                watermark: Int = 64 * 1024) {
        self.first = Side(first)
        self.second = Side(second)
        self.loop = loop
        self.scratch = scratch
        self.watermark = watermark
        lastActivity = loop.now
    }

    /// Attaches both endpoints and moves what is already there. Call on the loop.
    public func start() {
        first.endpoint.attach(self)
        second.endpoint.attach(self)
        guard !closed else { return }
        pump(.firstToSecond)
        pump(.secondToFirst)
    }

    /// Bytes waiting in memory in one direction (for tests and metrics).
    public func buffered(_ direction: Direction) -> Int {
        direction == .firstToSecond ? toSecond.count : toFirst.count
    }

    // MARK: TunnelEndpointHandler

    public func endpointReadable(_ endpoint: any TunnelEndpoint) {
        guard !closed else { return }
        let isFirst = endpoint === first.endpoint
        (isFirst ? first : second).canRead = true
        pump(isFirst ? .firstToSecond : .secondToFirst)
    }

    public func endpointWritable(_ endpoint: any TunnelEndpoint) {
        guard !closed else { return }
        let isFirst = endpoint === first.endpoint
        (isFirst ? first : second).canWrite = true
        pump(isFirst ? .secondToFirst : .firstToSecond)
    }

    public func endpointEnded(_ endpoint: any TunnelEndpoint, graceful: Bool) {
        guard !closed else { return }
        if graceful, let delegate {
            delegate.tunnelEndRequested(self)
        } else {
            close()
        }
    }

    // MARK: Moving bytes

    private func pump(_ direction: Direction) {
        // Writing may report readiness synchronously through another path; never re-enter.
        guard !pumping else { return }
        pumping = true
        defer { pumping = false }
        let (source, target) = direction == .firstToSecond ? (first, second) : (second, first)
        while !closed {
            // Bytes the target refused wait, but below the watermark reading goes on.
            _ = flushPending(direction, to: target)
            if closed { return }
            if source.inputEnded || !source.canRead { break }
            if pendingCount(direction) >= watermark { return }
            let result = scratch.buffer.withUnsafeMutableBytes { source.endpoint.receive(into: $0) }
            switch result {
            case .bytes(let n):
                lastActivity = loop.now
                scratch.buffer.withUnsafeBytes { raw in
                    let read = UnsafeRawBufferPointer(rebasing: raw[0..<n])
                    delegate?.tunnel(self, carried: read, direction)
                    deliver(read, direction, to: target)
                }
            case .wouldBlock:
                source.canRead = false
            case .closed:
                source.inputEnded = true
            }
        }
        if closed { return }
        if source.inputEnded && pendingCount(direction) == 0 && !target.outputShut {
            target.outputShut = true
            if !target.endpoint.shutdownOutput() { return close() }
        }
        if first.inputEnded && second.inputEnded && toFirst.count == 0 && toSecond.count == 0 { close() }
    }

    private func pendingCount(_ direction: Direction) -> Int {
        direction == .firstToSecond ? toSecond.count : toFirst.count
    }

    /// Writes what can be written of freshly read bytes; the rest waits in the direction's buffer.
    private func deliver(_ bytes: UnsafeRawBufferPointer, _ direction: Direction, to target: Side) {
        var offset = 0
        if pendingCount(direction) == 0 && target.canWrite {
            while offset < bytes.count {
                switch target.endpoint.send(UnsafeRawBufferPointer(rebasing: bytes[offset...])) {
                case .bytes(let n): offset += n
                case .wouldBlock: target.canWrite = false
                case .closed: return close()
                }
                if !target.canWrite { break }
            }
        }
        guard offset < bytes.count else { return }
        let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
        if direction == .firstToSecond { toSecond.bytes.append(contentsOf: rest) } else { toFirst.bytes.append(contentsOf: rest) }
    }

    /// Sends the direction's buffered bytes. True when none are left and the tunnel is open.
    private func flushPending(_ direction: Direction, to target: Side) -> Bool {
        while !closed && pendingCount(direction) > 0 {
            guard target.canWrite else { return false }
            let result: TunnelIO = direction == .firstToSecond
                ? toSecond.bytes.withUnsafeBytes { target.endpoint.send(UnsafeRawBufferPointer(rebasing: $0[toSecond.offset...])) }
                : toFirst.bytes.withUnsafeBytes { target.endpoint.send(UnsafeRawBufferPointer(rebasing: $0[toFirst.offset...])) }
            switch result {
            case .bytes(let n):
                if direction == .firstToSecond { toSecond.consume(n) } else { toFirst.consume(n) }
            case .wouldBlock:
                target.canWrite = false
                return false
            case .closed:
                close()
                return false
            }
        }
        return !closed
    }

    // MARK: Ending

    /// Ends the tunnel: queues `toFirst`/`toSecond` (e.g. WebSocket close frames) behind what is
    /// buffered, sends what the sockets take now without waiting, and closes both endpoints.
    public func close(sendingToFirst finalToFirst: [UInt8] = [], sendingToSecond finalToSecond: [UInt8] = []) {
        guard !closed else { return }
        if !finalToFirst.isEmpty && !first.outputShut {
            toFirst.bytes.append(contentsOf: finalToFirst)
            _ = flushPending(.secondToFirst, to: first)
        }
        if !finalToSecond.isEmpty && !second.outputShut && !closed {
            toSecond.bytes.append(contentsOf: finalToSecond)
            _ = flushPending(.firstToSecond, to: second)
        }
        guard !closed else { return }
        closed = true
        first.endpoint.close()
        second.endpoint.close()
        toFirst = Pending()
        toSecond = Pending()
        delegate?.tunnelClosed(self)
    }
}

/// The owner of a tunnel (on the loop thread).
public protocol ByteTunnelDelegate: AnyObject {
    /// Bytes read from one side, before they are passed on (to follow a protocol's framing).
    func tunnel(_ tunnel: ByteTunnel, carried bytes: UnsafeRawBufferPointer, _ direction: ByteTunnel.Direction)
    /// An endpoint's owner asks for a graceful end (the server shuts down).
    func tunnelEndRequested(_ tunnel: ByteTunnel)
    /// The tunnel has closed both endpoints.
    func tunnelClosed(_ tunnel: ByteTunnel)
}

/// The read buffer the tunnels of one loop share (a tunnel reads, passes on and forgets before the
/// next read, so one buffer per loop is enough).
public final class TunnelScratch {
    public static let size = 64 * 1024
    var buffer: [UInt8]
    public init() { buffer = [UInt8](repeating: 0, count: Self.size) }
}
