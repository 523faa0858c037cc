/// One header field as it arrived: the name keeps its original spelling, lookups ignore ASCII case.
public struct HTTPField: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// Header fields in arrival order. Duplicates are kept (RFC 9110 §5.3): a dictionary would lose
/// them and hide smuggling attempts such as two `Content-Length` fields.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [HTTPField]

    public init() { fields = [] }

    /// Empty, with room for `capacity` fields (building a head then allocates once).
    public init(minimumCapacity capacity: Int) {
        fields = []
        fields.reserveCapacity(capacity)
    }

    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { HTTPField(name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[HTTPField]> { fields.makeIterator() }

    /// The first value of `name`, compared without ASCII case.
    public subscript(name: String) -> String? {
        for field in fields where field.name.asciiCaseInsensitiveEquals(name) { return field.value }
        return nil
    }

    /// Every value of `name`, in arrival order.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.asciiCaseInsensitiveEquals(name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.asciiCaseInsensitiveEquals(name) }
    }

    /// Calls `body` with each comma-separated, trimmed, non-empty element of every `name` field,
    /// as it is spelled (compare without case); `body` returns false to stop. Allocates nothing:
    /// this runs on every proxied request (`Connection` of both sides).
    public func forEachToken(_ name: String, _ body: (Substring) -> Bool) {
        for field in fields where field.name.asciiCaseInsensitiveEquals(name) {
            var rest = field.value[...]
            while !rest.isEmpty {
                let comma = rest.utf8.firstIndex(of: UInt8(ascii: ",")) ?? rest.endIndex
                let element = rest[..<comma].trimmingASCIIWhitespace()
                if !element.isEmpty, !body(element) { return }
                rest = comma < rest.endIndex ? rest[rest.utf8.index(after: comma)...] : rest[rest.endIndex...]
            }
        }
    }

    /// True when a `name` field lists `token` (ASCII case ignored), e.g. `hasToken("Connection", "close")`.
    public func hasToken(_ name: String, _ token: String) -> Bool {
        var found = false
        forEachToken(name) { element in
            if element.asciiCaseInsensitiveEquals(token) { found = true }
            return !found
        }
        return found
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append(HTTPField(name: name, value: value))
    }

    /// Replaces every field called `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    public mutating func remove(_ name: String) {
        // Check first: `removeAll` would copy shared storage even when nothing matches.
        guard contains(name) else { return }
        fields.removeAll { $0.name.asciiCaseInsensitiveEquals(name) }
    }

    public mutating func removeAll(where predicate: (HTTPField) -> Bool) {
        fields.removeAll(where: predicate)
    }

    /// The comma-separated tokens of every `name` field, lowercased (e.g. `Connection: close, Upgrade`).
    public func tokens(_ name: String) -> [String] {
        var tokens: [String] = []
        forEachToken(name) { tokens.append($0.lowercased()); return true }
        return tokens
    }
}

public struct HTTPVersion: Sendable, Equatable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public init(major: Int, minor: Int) { self.major = major; self.minor = minor }
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// The request line and header fields of one request.
public struct HTTPRequestHead: Sendable, Equatable {
    public var method: String
    /// The request-target exactly as sent (origin-form for everything but `OPTIONS *` and CONNECT).
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders

    public init(method: String, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = HTTPHeaders()) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// The target up to `?`, still percent-encoded.
    public var path: Substring {
        if let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) { return target[..<q] }
        return target[...]
    }

    /// The bytes after the first `?`, untouched; nil when there is no `?`.
    public var query: Substring? {
        guard let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        return target[target.utf8.index(after: q)...]
    }

    /// RFC 9112 §9.3: HTTP/1.1 persists unless `Connection: close`; HTTP/1.0 only with `keep-alive`.
    public var keepAlive: Bool {
        guard headers.contains("Connection") else { return version != .http1_0 }
        if version == .http1_0 { return headers.hasToken("Connection", "keep-alive") }
        return !headers.hasToken("Connection", "close")
    }
}

/// Status line and headers of a response.
public struct HTTPResponseHead: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.headers = headers
    }
}

/// A complete response, sent in one write (head and body together, so a small answer never waits on
/// Nagle/delayed-ACK).
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: String) {
        self.init(status: status, headers: headers, body: Array(body.utf8))
    }

    public var head: HTTPResponseHead { HTTPResponseHead(status: status, headers: headers) }
}

/// Why a request body could not be read.
public enum HTTPBodyError: Error, Equatable, Sendable {
    /// The body is larger than the limit the handler asked for (answer `413`).
    case tooLarge(limit: Int)
    /// Chunked framing was broken (answer `400`, the connection closes).
    case malformed(String)
    /// The client went away or the connection ended before the body did.
    case connectionClosed
}

/// A request body, read as a stream so that a proxy never holds a whole upload.
///
/// `next()` returns the next piece, or nil at the end. The server reads the socket only while a
/// handler asks for more, which is the back-pressure: a slow consumer stops the client.
/// `Expect: 100-continue` is answered on the first `next()`, so a handler that refuses the request
/// without reading it never invites the body.
public protocol HTTPRequestBody: AnyObject, Sendable {
    /// `Content-Length` when the request declared one, 0 when it has no body, nil for chunked.
    var declaredLength: Int? { get }
    func next() async throws(HTTPBodyError) -> [UInt8]?
}

extension HTTPRequestBody {
    /// Reads the whole body, refusing it once it passes `limit` bytes.
    public func collect(limit: Int) async throws(HTTPBodyError) -> [UInt8] {
        if let declared = declaredLength, declared > limit { throw .tooLarge(limit: limit) }
        var all: [UInt8] = []
        while let piece = try await next() {
            if all.count + piece.count > limit { throw .tooLarge(limit: limit) }
            all.append(contentsOf: piece)
        }
        return all
    }
}

/// A body that is already in memory (tests, fast paths).
public final class BufferedRequestBody: HTTPRequestBody, @unchecked Sendable {
    private var remaining: [UInt8]?
    public let declaredLength: Int?

    public init(_ bytes: [UInt8]) {
        remaining = bytes.isEmpty ? nil : bytes
        declaredLength = bytes.count
    }

    public func next() async throws(HTTPBodyError) -> [UInt8]? {
        defer { remaining = nil }
        return remaining
    }
}

/// The peer of a connection, as the socket reports it.
public struct PeerAddress: Sendable, Equatable, CustomStringConvertible {
    /// Textual IP address without brackets or port: `127.0.0.1`, `::1`.
    public var ip: String
    public var port: Int
    public init(ip: String, port: Int) { self.ip = ip; self.port = port }
    public var description: String { ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)" }
}

/// One request as a handler sees it.
public struct HTTPRequest: Sendable {
    public var head: HTTPRequestHead
    public var body: any HTTPRequestBody
    public var peer: PeerAddress
    /// Short id for correlating the access log with handler logs (never derived from secrets).
    public var id: RequestID

    public init(head: HTTPRequestHead, body: any HTTPRequestBody = BufferedRequestBody([]),
                peer: PeerAddress = PeerAddress(ip: "127.0.0.1", port: 0), id: RequestID = RequestID(loop: 0, number: 0)) {
        self.head = head
        self.body = body
        self.peer = peer
        self.id = id
    }
}

/// A request's number on its event loop, written `LOOP-HEXNUMBER` (e.g. `1-2f`). Numbers, not a
/// string: it is formatted only when something logs it, not for every request.
public struct RequestID: Sendable, Equatable, CustomStringConvertible {
    public var loop: Int
    public var number: UInt64

    public init(loop: Int, number: UInt64) {
        self.loop = loop
        self.number = number
    }

    public var description: String { "\(loop)-\(String(number, radix: 16))" }
}

/// Why a response could not be written.
public enum HTTPWriteError: Error, Equatable, Sendable {
    /// The client closed the connection (or the server is forcing it shut).
    case connectionClosed
    /// The call does not fit the response's state (e.g. body before head).
    case invalidState(String)
}

/// Where a handler writes its answer. Either one `respond(_:)`, or `writeHead` + `writeBody`* +
/// `finish()` for a streamed body. `writeBody` waits while the client is slower than the producer
/// (back-pressure), so a relay never buffers a whole download.
public protocol HTTPResponseWriter: AnyObject, Sendable {
    /// Sends a complete response in one write.
    func respond(_ response: HTTPResponse) async
    /// Starts a streamed response. `contentLength` nil means chunked (HTTP/1.1) or close-delimited (1.0).
    func writeHead(_ head: HTTPResponseHead, contentLength: Int?) async throws(HTTPWriteError)
    /// Sends one piece of the body now (each call is a flush point: SSE events leave as they come).
    func writeBody(_ bytes: [UInt8]) async throws(HTTPWriteError)
    /// Ends the streamed body (the last chunk for chunked encoding).
    func finish() async throws(HTTPWriteError)
    /// Ends the exchange abruptly: the connection is closed without completing the body (used when an
    /// upstream breaks mid-stream, so the client sees a truncated body rather than a wrong one).
    func abort()
    /// True once a head has been sent.
    var headWritten: Bool { get }
}

/// Application entry point of the server.
///
/// Each request first gets `immediateResponse(to:)`, called synchronously on the connection's event
/// loop: answers that need no I/O (health probes, cached files) leave without creating a task. When
/// it returns nil, `handle(_:writer:)` runs in a task whose executor preference is that same event
/// loop, so the handler's code runs on the loop thread (no hop to the global pool) and awaits on
/// body reads, response writes and upstream sockets are resumed there.
public protocol HTTPHandler: Sendable {
    func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse?
    func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async
}

extension HTTPHandler {
    public func immediateResponse(to head: HTTPRequestHead, peer: PeerAddress) -> HTTPResponse? { nil }
}

/// Reason phrases for the status codes Gatehouse sends.
public enum HTTPStatus {
    public static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 416: "Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}

extension StringProtocol {
    /// ASCII-only case-insensitive comparison: header names are ASCII tokens, and locale-aware
    /// folding would both cost time and accept look-alike characters.
    ///
    /// Inlinable so callers in other modules get a version specialized for their string types:
    /// the unspecialized generic looks up type metadata at run time on every call.
    @inlinable
    public func asciiCaseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        // Header lookups run many times per request: compare contiguous bytes when possible.
        if let verdict = a.withContiguousStorageIfAvailable({ x in
            b.withContiguousStorageIfAvailable { y in Self.asciiFoldedEqual(x, y) }
        }), let verdict {
            return verdict
        }
        for (x, y) in zip(a, b) where x != y {
            let lx = (x >= 65 && x <= 90) ? x | 0x20 : x
            let ly = (y >= 65 && y <= 90) ? y | 0x20 : y
            if lx != ly { return false }
        }
        return true
    }

    @usableFromInline
    static func asciiFoldedEqual(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        for i in 0..<x.count {
            let p = x[i], q = y[i]
            if p == q { continue }
            let lp = (p >= 65 && p <= 90) ? p | 0x20 : p
            let lq = (q >= 65 && q <= 90) ? q | 0x20 : q
            if lp != lq { return false }
        }
        return true
    }

    @inlinable
    public func trimmingASCIIWhitespace() -> Substring {
        // On the UTF-8 view: space and tab are single bytes, and Character comparison is far slower.
        let s = Substring(self)
        let bytes = s.utf8
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while end > start {
            let before = bytes.index(before: end)
            guard bytes[before] == 0x20 || bytes[before] == 0x09 else { break }
            end = before
        }
        return s[start..<end]
    }
}
