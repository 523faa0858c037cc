import EventLoops
import HTTP1
import Synchronization

/// A whole answer read by `FetchClient`: status, final head's fields, and the (decoded from
/// chunked, never content-decoded) body.
public struct FetchResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
}

/// Why a fetch produced no answer.
public enum FetchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL is not an absolute `http(s)://host[:port][/path][?query]` (or not one the caller
    /// allows): no user name or password, no spaces or control characters.
    case invalidURL
    /// No complete answer within the fetch's timeout.
    case timeout
    /// More body bytes arrived than the fetch's cap (counted as they arrive, whatever
    /// `Content-Length` declared).
    case responseTooLarge(limit: Int)
    /// No usable answer: connection, TLS or protocol failure; the error says which.
    case failed(UpstreamError)
    /// The calling task was cancelled.
    case cancelled

    public var description: String {
        switch self {
        case .invalidURL: "invalid URL"
        case .timeout: "no answer in time"
        case .responseTooLarge(let limit): "response larger than \(limit) bytes"
        case .failed(let error): error.description
        case .cancelled: "cancelled"
        }
    }
}

/// One-shot HTTP/1.1 exchanges read whole into memory: the few calls the gateway makes to its
/// OpenID provider, and the development provider's back-channel logout deliveries.
///
/// They run on the upstream client (`UpstreamClient`, OpenSSL for `https://` against the system CA
/// bundle), on the caller's event loop when it has one (a login's calls stay on the loop that
/// serves it: no thread hop), else on a loop of the client's own, started at the first such call
/// ("gatehouse-fetch"). Connections are kept and reused per loop and origin. No redirect is
/// followed (a `3xx` is an answer), no proxy from the environment, no content decoding, no cookies.
///
/// For example: `let answer = try await FetchClient.shared.fetch("GET", url, timeoutNanoseconds: 10_000_000_000)`.
public final class FetchClient: Sendable {
    /// The process's client: one connection pool per loop and origin, however many callers.
    public static let shared = FetchClient()

    public static let defaultMaximumResponseSize = 1 << 20

    /// Connections idle for two minutes are not reused (libcurl's `CURLOPT_MAXAGE_CONN`, 118 s).
    private let plain = UpstreamClient(maxIdlePerUpstream: 4, maxIdleAgeNanoseconds: 118_000_000_000)
    private let secure = UpstreamClient(maxIdlePerUpstream: 4, usesTLS: true, maxIdleAgeNanoseconds: 118_000_000_000)
    private let ownLoop = Mutex<Result<EventLoop, UpstreamError>?>(nil)

    private init() {}

    /// Sends `method` to `url` with `headers` and `body` (nil: no body), and reads the answer whole.
    ///
    /// - Parameters:
    ///   - allowPlainHTTP: false limits the call to `https://`.
    ///   - timeoutNanoseconds: the whole exchange's limit, connection and TLS handshake included.
    ///   - maxResponseBytes: a body above this, counted as it arrives, fails with `.responseTooLarge`.
    public func fetch(_ method: String, _ url: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8]? = nil,
                      allowPlainHTTP: Bool = true, timeoutNanoseconds: UInt64,
                      maxResponseBytes: Int = FetchClient.defaultMaximumResponseSize) async throws(FetchError) -> FetchResponse {
        guard let target = FetchTarget(url), target.tls || allowPlainHTTP, Self.isMethod(method) else {
            throw .invalidURL
        }
        let client = target.tls ? secure : plain
        let deadline = EventLoop.monotonicNow() &+ timeoutNanoseconds
        let limit = max(0, maxResponseBytes)
        let result: Result<FetchResponse, FetchError>
        if EventLoop.current != nil {
            result = await Self.exchange(client, method, target, headers, body, deadline: deadline, limit: limit)
        } else {
            let loop: EventLoop
            do { loop = try fetchLoop() } catch { throw .failed(error) }
            let task = Task(executorPreference: loop) {
                await loop.hop()
                return await Self.exchange(client, method, target, headers, body, deadline: deadline, limit: limit)
            }
            result = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
        }
        if case .failure = result, Task.isCancelled { throw .cancelled }
        return try result.get()
    }

    /// On the loop: the exchange, its body read whole within `limit` bytes and by `deadline`.
    private static func exchange(_ client: UpstreamClient, _ method: String, _ target: FetchTarget, _ headers: HTTPHeaders,
                                 _ body: [UInt8]?, deadline: UInt64, limit: Int) async -> Result<FetchResponse, FetchError> {
        var timeouts = UpstreamTimeouts()
        timeouts.deadline = deadline
        let request = UpstreamRequest(host: target.host, port: target.port, method: method, target: target.path, headers: headers)
        let response: UpstreamResponse
        do {
            response = try await client.send(request, body: body.map { WholeRequestBody($0) }, timeouts: timeouts)
        } catch {
            return .failure(fetchError(error))
        }
        var collected: [UInt8] = []
        while true {
            let now = EventLoop.monotonicNow()
            guard now < deadline else {
                response.discard()
                return .failure(.timeout)
            }
            let piece: [UInt8]?
            do { piece = try await response.nextBodyPiece(idleTimeout: deadline - now) } catch {
                return .failure(fetchError(error))
            }
            guard let piece else { break }
            guard piece.count <= limit - collected.count else {
                response.discard()
                return .failure(.responseTooLarge(limit: limit))
            }
            collected += piece
        }
        return .success(FetchResponse(status: response.head.status, headers: response.head.headers, body: collected))
    }

    /// A method is a token (RFC 9110 §9.1).
    private static func isMethod(_ method: String) -> Bool {
        !method.isEmpty && method.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && !"()<>@,;:\\\"/[]?={}".utf8.contains($0) }
    }

    private static func fetchError(_ error: UpstreamError) -> FetchError {
        switch error {
        case .connectTimeout, .firstByteTimeout, .bodyTimeout: .timeout
        case .invalidRequest: .invalidURL
        default: .failed(error)
        }
    }

    /// The client's own loop, for callers that run on none.
    private func fetchLoop() throws(UpstreamError) -> EventLoop {
        try ownLoop.withLock { started in
            if let started { return started }
            let made: Result<EventLoop, UpstreamError>
            do {
                let loop = try EventLoop(index: 0, threadName: "gatehouse-fetch")
                loop.start()
                made = .success(loop)
            } catch {
                made = .failure(.connectFailed("no event loop for provider calls: \(error)"))
            }
            started = made
            return made
        }.get()
    }
}

/// A request body held whole in memory.
final class WholeRequestBody: HTTPRequestBody, @unchecked Sendable {
    private var bytes: [UInt8]?
    let declaredLength: Int?

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        declaredLength = bytes.count
    }

    func next() async throws(HTTPBodyError) -> [UInt8]? {
        defer { bytes = nil }
        return bytes
    }
}
