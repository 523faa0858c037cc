import CLinux
import TLSTransport
/// Limits and timeouts of the server, with the contract's defaults.
public struct HTTPServerConfiguration: Sendable {
    /// Numeric address to bind (`0.0.0.0`, `::`, `127.0.0.1`).
    public var host: String = "0.0.0.0"
    /// 0 picks a free port (see `HTTPServer.localPort`).
    public var port: Int = 8080
    /// Event loops (threads); default: one per core.
    public var loopCount: Int = HTTPServerConfiguration.coreCount
    /// Keeps loop `i` on the `i`-th CPU of the process's affinity mask when there is one loop per
    /// allowed CPU and more than one (see `CPUAffinity`). Off by default: a server with a hand-picked
    /// loop count, or several in one process, leaves placement to the scheduler.
    public var pinsLoopsToCPUs: Bool = false
    /// Connections beyond this are closed at accept time (with a log line), not left hanging.
    public var maxConnections: Int = 10_000
    /// Request head limit (431 beyond it). Default 16 KiB.
    public var maxHeadBytes: Int = 16 * 1024
    /// Request bodies larger than this are refused with 413. Default 10 MiB.
    public var maxBodyBytes: Int = 10 * 1024 * 1024
    /// A request's head must arrive within this time (408 and close). Default 10 s.
    public var headTimeoutNanoseconds: UInt64 = 10_000_000_000
    /// Idle keep-alive connections are closed after this. Default 60 s.
    public var idleTimeoutNanoseconds: UInt64 = 60_000_000_000
    /// A body or a response that makes no progress for this long ends the connection. Default 60 s.
    public var progressTimeoutNanoseconds: UInt64 = 60_000_000_000
    /// Unread request body the server will read and discard to keep a connection usable.
    public var maxDrainBytes: Int = 256 * 1024
    /// Unsent response bytes above which a connection stops reading and parsing requests (pipelined
    /// requests then wait in the socket buffers) and `writeBody` waits for the client. Default 256 KiB.
    public var writeHighWatermark: Int = 256 * 1024
    /// Unsent response bytes below which both resume. Default 128 KiB.
    public var writeLowWatermark: Int = 128 * 1024
    /// Set: the listener speaks HTTPS with this certificate (each connection is accepted with the
    /// context it holds at that moment). nil: plain HTTP.
    public var tls: ServerCertificate? = nil

    /// Whether the parser's memos answer (`SpeedLayer`): the gateway shares its switch here.
    public var speedLayer = SpeedLayer()

    public init() {}

    /// The CPUs the process may run on: its affinity mask (as nginx's `worker_processes auto`), so a
    /// container limited with a cpuset or a server started under `taskset` runs one loop per CPU it
    /// has, not one per CPU of the host; the online CPUs when the mask cannot be read.
    public static var coreCount: Int {
        #if canImport(Glibc)
        let allowed = Int(gatehouse_allowed_cpus(nil, 0))
        let n = allowed > 0 ? allowed : Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return max(1, n)
        #else
        return 2
        #endif
    }
}

#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import HTTP1

/// One finished exchange, for access logs and metrics. Never carries the query, cookies or bodies.
public struct HTTPAccessRecord: Sendable {
    public var method: String
    /// The path without the query string.
    public var path: Substring
    public var status: Int
    public var bytesSent: Int
    public var durationNanoseconds: UInt64
    public var requestID: RequestID
    public var peer: PeerAddress
    /// The request's W3C trace id (received or fresh); nil for requests refused before parsing.
    public var traceID: TraceID? = nil
    /// The request's own span when it is recorded (`TraceParent.recordsSpans`), else 0.
    public var spanID: UInt64 = 0
    /// Its parent: the client's span, 0 for the root of a fresh trace.
    public var parentSpanID: UInt64 = 0
    /// What the handler said the request is (`RequestConnection.categorize`); nil for requests the
    /// server answered without asking the handler (malformed, too large).
    public var category: Int? = nil
}

/// Hooks for observing the server (access log, metrics). Called on loop threads: keep them cheap.
/// A class (`AnyObject`): the server copies its observer into each request's work; a class
/// existential is copied by a retain, any other through the type's value witnesses (~140
/// instructions, twice per request).
public protocol HTTPServerObserver: AnyObject, Sendable {
    func requestCompleted(_ record: HTTPAccessRecord)
    func connectionOpened()
    func connectionClosed()
    /// A connection was refused at accept time because `maxConnections` was reached.
    func connectionRejected()
    /// Called once per event-loop batch on each loop thread (flush buffers here).
    func endOfBatch(loop: Int)
    /// Whether `requestCompleted` reads `traceID` (an access log): when not, a request answered
    /// without a task (`HandlerAnswer.now`) gets no trace at all, and makes no fresh one.
    var recordsTraceIDs: Bool { get }
    /// Set when the observer records spans: each request's trace then gets a span of its own,
    /// sampled as this says, and its record carries it. Default: nil.
    var traceSampling: TraceSampling? { get }
    /// The observer the connections of `loop` call (as `HTTPHandler.loopHandler(for:)`, and for
    /// the same reason: a request copies its observer). Default: `self`.
    func loopObserver(for loop: EventLoop) -> any HTTPServerObserver
}

extension HTTPServerObserver {
    public func connectionOpened() {}
    public func connectionClosed() {}
    public func connectionRejected() {}
    public func endOfBatch(loop: Int) {}
    public var recordsTraceIDs: Bool { true }
    public var traceSampling: TraceSampling? { nil }
    public func loopObserver(for loop: EventLoop) -> any HTTPServerObserver { self }
}
