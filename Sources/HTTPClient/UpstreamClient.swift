import EventLoops
import HTTP1

/// The client for upstreams, `http://` and (with `usesTLS`) `https://`: keep-alive connections
/// pooled per event loop, so a proxied request is written, answered and relayed on the loop that
/// received it, without locks on the connection or a thread hop. TLS is OpenSSL driven by the same
/// readiness (`TLSSession`), verified against the system CA bundle (`TLSClientContext`).
///
/// For example:
/// ```swift
/// let response = try await client.send(UpstreamRequest(host: "127.0.0.1", port: 9000, head: head), body: body)
/// while let piece = try await response.nextBodyPiece() { … }
/// ```
public final class UpstreamClient: Sendable {
    public typealias Timeouts = UpstreamTimeouts

    public let timeouts: Timeouts
    /// Idle connections kept per loop and upstream.
    public let maxIdlePerUpstream: Int
    /// `https://` upstreams: every connection is TLS, and `Host` leaves out port 443 instead of 80.
    public let usesTLS: Bool
    /// A pooled connection idle for longer is closed rather than reused (nil: no limit): the
    /// longer a connection sat idle, the likelier the server is closing it as a request goes out.
    public let maxIdleAgeNanoseconds: UInt64?
    let addresses = ResolvedAddresses()

    /// Whether connections remember their last response head's decision and field lines.
    public let speedLayer: SpeedLayer

    public init(timeouts: Timeouts = Timeouts(), maxIdlePerUpstream: Int = 64, usesTLS: Bool = false,
                maxIdleAgeNanoseconds: UInt64? = nil, speedLayer: SpeedLayer = SpeedLayer()) {
        self.speedLayer = speedLayer
        self.timeouts = timeouts
        self.maxIdlePerUpstream = maxIdlePerUpstream
        self.usesTLS = usesTLS
        self.maxIdleAgeNanoseconds = maxIdleAgeNanoseconds
    }

    /// Sends a request and returns once the response head has arrived. Must run on an event loop
    /// (a handler task of `HTTPServer`). The request body is streamed from `body` (nil: no body).
    ///
    /// A failure on a reused connection before any response byte is retried once on a new
    /// connection (the upstream may have closed the idle connection as we wrote) only when that
    /// cannot run the request twice: see `mayRetry`. Anything else fails with the error (`502`).
    public func send(_ request: UpstreamRequest, body: (any HTTPRequestBody)?) async throws(UpstreamError) -> UpstreamResponse {
        try await send(request, body: body, timeouts: timeouts)
    }

    /// As `send(_:body:)`, with this exchange's own limits.
    public func send(_ request: UpstreamRequest, body: (any HTTPRequestBody)?, timeouts: Timeouts) async throws(UpstreamError) -> UpstreamResponse {
        try await send(request, body: body, timeouts: timeouts, firstAttempt: 1)
    }

    /// `firstAttempt` 2: the request failed once already (`UpstreamCall.finish`), so no retry is left.
    func send(_ request: UpstreamRequest, body: (any HTTPRequestBody)?, timeouts: Timeouts,
              firstAttempt: Int) async throws(UpstreamError) -> UpstreamResponse {
        guard let loop = EventLoop.current else { throw .connectFailed("not on an event loop") }
        let key = UpstreamKey(host: request.host, port: request.port, tls: usesTLS)
        let pool = loopPool(loop)
        let hasBody = body.map { $0.declaredLength != 0 } ?? false
        var attempt = firstAttempt - 1
        while true {
            attempt += 1
            let connection: UpstreamConnection
            if let pooled = pool.take(key, maxIdleAge: maxIdleAgeNanoseconds) {
                connection = pooled
            } else {
                connection = try await connect(key, loop: loop, timeouts: timeouts)
            }
            let timeouts = timeouts.cut(now: loop.now)
            if timeouts.deadline != nil && timeouts.firstByteNanoseconds == 0 {
                // Out of time before the request left: nothing was sent, nothing to retry.
                if connection.uses > 0 { pool.put(connection, limit: maxIdlePerUpstream) } else { connection.close() }
                throw .firstByteTimeout
            }
            let reused = connection.beginRequest()
            do {
                try await connection.writeHead(timeout: timeouts.firstByteNanoseconds) { bytes in
                    request.encodeHead(bodyFraming: body, on: connection, into: &bytes)
                }
                if let body, hasBody {
                    try await stream(body, to: connection, chunked: body.declaredLength == nil, timeouts: timeouts)
                }
                let (head, framing, keepAlive) = try await connection.readHead(requestMethod: request.method,
                                                                               timeout: timeouts.firstByteNanoseconds)
                return Self.response(head: head, framing: framing, keepAlive: keepAlive, connection: connection, pool: pool,
                                timeouts: timeouts)
            } catch {
                connection.close()
                if Self.mayRetry(method: request.method, hasBody: hasBody, reusedConnection: reused, attempt: attempt,
                                 error: error, wroteRequestBytes: connection.wroteRequestBytes) { continue }
                throw error
            }
        }
    }

    /// The answer whose head was just read from `connection`, its body next.
    /// (Static, with the pool's copy of the limit: a call on the loop does not reach the client.)
    static func response(head: HTTPResponseHead, framing: UpstreamResponseFraming, keepAlive: Bool,
                         connection: UpstreamConnection, pool: LoopPool, timeouts: Timeouts) -> UpstreamResponse {
        connection.beginBody(framing.framing)
        return UpstreamResponse(head: head, framing: framing, connection: connection, keepAlive: keepAlive,
                                pool: pool, maxIdle: pool.maxIdlePerUpstream, idleTimeout: timeouts.bodyIdleNanoseconds)
    }

    /// Whether an exchange that failed may be sent again, once, on a new connection.
    ///
    /// Only a reused pooled connection that the upstream closed before any response byte
    /// (`.connectionClosed`) qualifies — the classic keep-alive race — and then only when the
    /// request cannot run twice: not one byte of it was written, or it is a bodiless `GET`, `HEAD`
    /// or `OPTIONS` (safe methods, RFC 9110 §9.2.1; a `POST`, even empty, may already have been
    /// executed, and §9.2.2 lets only idempotent requests be repeated). nginx's
    /// `proxy_next_upstream` never repeats a non-idempotent request either.
    static func mayRetry(method: String, hasBody: Bool, reusedConnection: Bool, attempt: Int, error: UpstreamError,
                         wroteRequestBytes: Bool) -> Bool {
        guard attempt == 1, reusedConnection, error == .connectionClosed else { return false }
        if !wroteRequestBytes { return true }
        return !hasBody && (method == "GET" || method == "HEAD" || method == "OPTIONS")
    }

    private func stream(_ body: any HTTPRequestBody, to connection: UpstreamConnection, chunked: Bool,
                        timeouts: Timeouts) async throws(UpstreamError) {
        while true {
            let piece: [UInt8]?
            do { piece = try await body.next() } catch { throw .requestBody(error) }
            guard let piece else { break }
            if piece.isEmpty { continue }
            if chunked {
                var framed = ChunkedEncoder.chunkHeader(piece.count)
                framed.append(contentsOf: piece)
                framed.append(contentsOf: ChunkedEncoder.chunkEnd)
                try await connection.write(framed, timeout: timeouts.firstByteNanoseconds)
            } else {
                try await connection.write(piece, timeout: timeouts.firstByteNanoseconds)
            }
        }
        if chunked { try await connection.write(ChunkedEncoder.lastChunk, timeout: timeouts.firstByteNanoseconds) }
    }

    /// A new connection to `key`: its addresses in the resolver's order, the next one tried when
    /// one fails outright (a host whose first address is IPv6 on a network without IPv6 routes),
    /// never after a timeout. Each attempt gets the connect timeout, cut to the exchange's deadline.
    private func connect(_ key: UpstreamKey, loop: EventLoop, timeouts: Timeouts) async throws(UpstreamError) -> UpstreamConnection {
        let candidates = try await addresses.addresses(of: key, loop: loop)
        var failure = UpstreamError.connectFailed("no address for \(key.host)")
        for address in candidates.prefix(4) {
            let timeout = timeouts.cut(now: loop.now).connectNanoseconds
            if timeout == 0 { throw .connectTimeout }
            do {
                return try await UpstreamConnection.open(key, address: address, loop: loop, timeout: timeout, speedLayer: speedLayer)
            } catch {
                guard case .connectFailed = error else { throw error }
                failure = error
            }
        }
        throw failure
    }

    /// This client's idle connections on `loop`, kept by the loop itself (`EventLoop.localValue`):
    /// found without a lock, and gone with the loop.
    func loopPool(_ loop: EventLoop) -> LoopPool {
        loop.localValue(for: ObjectIdentifier(self)) { LoopPool(client: self) }
    }
}

/// What to send upstream: the origin-form target and headers are already decided by the proxy policy.
public struct UpstreamRequest: Sendable {
    public var host: String
    public var port: Int
    public var method: String
    /// Path and query, origin-form.
    public var target: String
    /// The fields, as the proxy policy decided them (`ProxyHeaderPolicy.upstreamRequestFields`).
    public var fields: ForwardedRequestFields
    /// The fields as a list (made for the call).
    public var headers: HTTPHeaders { fields.headers }

    public init(host: String, port: Int, method: String, target: String, headers: HTTPHeaders) {
        self.init(host: host, port: port, method: method, target: target, fields: ForwardedRequestFields(passing: headers))
    }

    public init(host: String, port: Int, method: String, target: String, fields: ForwardedRequestFields) {
        self.host = host
        self.port = port
        self.method = method
        self.target = target
        self.fields = fields
    }

    /// The head as sent, encoded in one pass: `Host` for the upstream, the policy's fields, and
    /// framing that matches how the body is relayed (a bodiless POST/PUT/PATCH says `Content-Length: 0`).
    func encodedHead(bodyFraming body: (any HTTPRequestBody)?, defaultPort: Int = 80) -> [UInt8] {
        var bytes: [UInt8] = []
        encodeHead(bodyFraming: body, defaultPort: defaultPort, into: &bytes)
        return bytes
    }

    /// The head as sent on `connection` (to `connection.key`, with its `Host` line), appended to `bytes`.
    func encodeHead(bodyFraming body: (any HTTPRequestBody)?, on connection: UpstreamConnection, into bytes: inout [UInt8]) {
        encodeHead(bodyFraming: body, defaultPort: connection.key.defaultPort, hostLine: connection.hostLine, into: &bytes)
    }

    /// As `encodedHead`, appended to `bytes`.
    /// `hostLine`: the connection's `Host` line for this request's host and port, if written.
    func encodeHead(bodyFraming body: (any HTTPRequestBody)?, defaultPort: Int = 80, hostLine: [UInt8]? = nil,
                    into bytes: inout [UInt8]) {
        var contentLength: Int? = nil
        var chunked = false
        if let body {
            if let length = body.declaredLength {
                if length > 0 || method == "POST" || method == "PUT" || method == "PATCH" { contentLength = length }
            } else {
                chunked = true
            }
        }
        // `Host` as `hostField(defaultPort:)` spells it, written straight into the head.
        RequestHeadEncoder.encodeUpstreamRequest(method: method, target: target, hostName: host,
                                                 port: port == defaultPort ? nil : port, hostLine: hostLine, fields: fields,
                                                 contentLength: contentLength, chunked: chunked, into: &bytes)
    }

    /// `Host` for the upstream: the port only when it is not the scheme's (80, or 443 for
    /// `https://`), an IPv6 literal in brackets.
    func hostField(defaultPort: Int = 80) -> String {
        let bracketed = host.containsASCII(UInt8(ascii: ":"))
        if !bracketed && port == defaultPort { return host }
        // Written as bytes once (concatenation and `String(port)` cost about 800 instructions on
        // every proxied request).
        var bytes: [UInt8] = []
        bytes.reserveCapacity(host.utf8.count + 8)
        if bracketed { bytes.append(UInt8(ascii: "[")) }
        bytes.append(contentsOf: host.utf8)
        if bracketed { bytes.append(UInt8(ascii: "]")) }
        if port != defaultPort {
            bytes.append(UInt8(ascii: ":"))
            let digitsStart = bytes.count
            var rest = port
            repeat {
                bytes.insert(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10), at: digitsStart)
                rest /= 10
            } while rest > 0
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Idle connections of one event loop. Only touched from that loop's thread.
final class LoopPool: @unchecked Sendable {
    /// The client whose connections these are. A call on the loop reaches it through its pool (a
    /// reference of the loop's own) instead of keeping a reference of its own: the client is shared
    /// by the loops, and each reference a request took moved its count between their cores.
    let client: UpstreamClient
    /// The client's `maxIdlePerUpstream`.
    let maxIdlePerUpstream: Int

    init(client: UpstreamClient) {
        self.client = client
        maxIdlePerUpstream = client.maxIdlePerUpstream
    }

    /// One list per upstream, as a class so that taking and returning a connection mutates the list
    /// in place (a dictionary value mutated through `idle[key]?` is copied on every request).
    private final class IdleList {
        // Unchecked (a runtime call per access on the hot path): only popped, appended to and
        // filtered by `isReusable`, which reads the connection, never this list.
        @exclusivity(unchecked) var connections: [UpstreamConnection] = []
    }

    /// One entry per upstream of the configured routes, searched in order: a few string
    /// comparisons cost less than hashing the key twice per proxied request.
    @exclusivity(unchecked) private var idle: [(key: UpstreamKey, list: IdleList)] = []

    private func list(for key: UpstreamKey) -> IdleList? {
        for entry in idle where entry.key == key { return entry.list }
        return nil
    }

    /// The most recently used idle connection to `key`; one idle for more than `maxIdleAge`
    /// nanoseconds is closed instead (nil: no limit).
    func take(_ key: UpstreamKey, maxIdleAge: UInt64? = nil) -> UpstreamConnection? {
        guard let list = list(for: key) else { return nil }
        while let connection = list.connections.popLast() {
            connection.idleInPool = false
            guard connection.isReusable else { continue }
            if let maxIdleAge, connection.loop.now &- connection.idleSince > maxIdleAge {
                connection.close()
                continue
            }
            return connection
        }
        return nil
    }

    func put(_ connection: UpstreamConnection, limit: Int) {
        let list: IdleList
        if let known = self.list(for: connection.key) {
            list = known
        } else {
            list = IdleList()
            idle.append((connection.key, list))
        }
        // Closed connections are dropped by `take`, and here when the list is full.
        if list.connections.count >= limit {
            list.connections.removeAll { !$0.isReusable }
        }
        if list.connections.count >= limit {
            connection.close()
            return
        }
        connection.idleInPool = true
        connection.idleSince = connection.loop.now
        list.connections.append(connection)
    }
}

extension UpstreamClient: UpstreamTransport {
    /// A body declared empty is not sent at all (no `Content-Length: 0` on a `GET`).
    public func exchange(_ request: UpstreamRequest, body: any HTTPRequestBody) async throws(UpstreamError) -> any UpstreamAnswer {
        try await exchangeDirectly(request, body: body)
    }

    /// `exchange`, called on the client itself rather than through `any UpstreamTransport`: an await
    /// through a protocol witness is followed by a task switch back to the caller's executor (a
    /// status-lock lookup of the task's preference), a direct call to this method is not.
    public func exchangeDirectly(_ request: UpstreamRequest, body: any HTTPRequestBody) async throws(UpstreamError) -> UpstreamResponse {
        try await send(request, body: body.declaredLength == 0 ? nil : body)
    }
}

extension UpstreamClient: UpstreamSwitchingTransport {
    /// Always a new connection: a connection that switched protocols carries someone's tunnel and
    /// must never answer another request, and one whose switch was refused is closed after its
    /// answer (an upstream may leave it in an unknown state).
    public func switchProtocols(_ request: UpstreamRequest) async throws(UpstreamError) -> UpstreamSwitch {
        guard let loop = EventLoop.current else { throw .connectFailed("not on an event loop") }
        let key = UpstreamKey(host: request.host, port: request.port, tls: usesTLS)
        let connection = try await connect(key, loop: loop, timeouts: timeouts)
        connection.uses = 1
        do {
            try await connection.write(request.encodedHead(bodyFraming: nil, defaultPort: key.defaultPort),
                                       timeout: timeouts.firstByteNanoseconds)
            let (head, version) = try await connection.readFinalHead(timeout: timeouts.firstByteNanoseconds)
            if head.status == 101 { return .switched(head, connection.detachForTunnel()) }
            let framing = try UpstreamResponseFraming(head, requestMethod: request.method, version: version)
            connection.beginBody(framing.framing)
            return .answered(UpstreamResponse(head: head, framing: framing, connection: connection, keepAlive: false,
                                              pool: loopPool(loop), maxIdle: maxIdlePerUpstream,
                                              idleTimeout: timeouts.bodyIdleNanoseconds))
        } catch {
            connection.close()
            throw error
        }
    }
}

/// The time limits of one upstream exchange, the same for the `http://` and the `https://` client.
/// Silence while waiting for the browser (a slow upload, a slow reader) does not count.
public struct UpstreamTimeouts: Sendable {
    public var connectNanoseconds: UInt64 = 5_000_000_000
    /// Longest upstream silence before the response head.
    public var firstByteNanoseconds: UInt64 = 30_000_000_000
    /// Longest upstream silence inside a response body (server-sent events may pause between events).
    public var bodyIdleNanoseconds: UInt64 = 300_000_000_000
    /// When set (monotonic nanoseconds, `EventLoop.monotonicNow()`), the connect and the wait for
    /// the head are cut to end by then: a whole-exchange limit (`FetchClient`).
    public var deadline: UInt64?

    /// The limits with each wait cut to what is left before `deadline`, measured `now`.
    func cut(now: UInt64) -> UpstreamTimeouts {
        guard let deadline else { return self }
        let left = deadline > now ? deadline - now : 0
        var cut = self
        cut.connectNanoseconds = min(connectNanoseconds, left)
        cut.firstByteNanoseconds = min(firstByteNanoseconds, left)
        return cut
    }

    public init() {}
}

/// What `UpstreamClient.sendOnLoop` did: sent the head (the call to wait on), or nothing (the
/// request handed back whole, for `send`).
public enum LoopSend: Sendable {
    case sent(UpstreamCall)
    case notSent(UpstreamRequest)

    /// The call, when sent.
    public var call: UpstreamCall? {
        if case .sent(let call) = self { return call }
        return nil
    }
}

extension UpstreamClient {
    /// Sends a bodiless request from the event loop without suspending, when that can be done: a
    /// plain-TCP upstream, an idle pooled connection to it, and a head that leaves in one `send`
    /// (or partly: `finish` sends the rest). Otherwise nothing is sent and the request comes back
    /// (`.notSent`) for `send`. Must be called on `loop`, the loop of the caller's connection.
    public func sendOnLoop(_ request: consuming UpstreamRequest, loop: EventLoop) -> LoopSend {
        guard !usesTLS else { return .notSent(request) }
        let key = UpstreamKey(host: request.host, port: request.port, tls: false)
        let pool = loopPool(loop)
        guard let connection = pool.take(key, maxIdleAge: maxIdleAgeNanoseconds) else { return .notSent(request) }
        let timeouts = timeouts.cut(now: loop.now)
        if timeouts.deadline != nil && timeouts.firstByteNanoseconds == 0 {
            pool.put(connection, limit: maxIdlePerUpstream)
            return .notSent(request)
        }
        let reused = connection.beginRequest()
        let sent = connection.writeHeadNow { bytes in request.encodeHead(bodyFraming: nil, on: connection, into: &bytes) }
        guard sent != .notSent else {
            // Not one byte left, so `send` may start over with another connection.
            connection.close()
            return .notSent(request)
        }
        return .sent(UpstreamCall(request: consume request, connection: connection, pool: pool, timeouts: timeouts,
                                  reused: reused, firstByteDeadline: loop.now &+ timeouts.firstByteNanoseconds))
    }
}
