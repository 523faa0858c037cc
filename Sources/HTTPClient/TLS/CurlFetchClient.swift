import HTTP1

/// A whole answer read by `CurlFetchClient`: status, final head's fields, and the (decoded from
/// chunked, never content-decoded) body.
public struct CurlFetchResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
}

/// Why a fetch produced no answer.
public enum CurlFetchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL is not `http(s)://…` (or not one the caller allows), or libcurl's parser refused it.
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

/// One-shot HTTP exchanges read whole into memory, through libcurl (OpenSSL, the system CA bundle)
/// on a multi handle of their own: the few calls the gateway makes to its OpenID provider, and the
/// development provider's back-channel logout deliveries. Connections to the same origin are kept
/// and reused, as with `HTTPSUpstreamClient` (same handle configuration: no redirect followed, no
/// proxy from the environment, no content decoding, HTTP/1.1).
///
/// For example: `let answer = try await CurlFetchClient.shared.fetch("GET", url, timeoutNanoseconds: 10_000_000_000)`.
public final class CurlFetchClient: Sendable {
    /// The process's client: one thread and one connection cache, however many callers.
    public static let shared = CurlFetchClient()

    public static let defaultMaximumResponseSize = 1 << 20

    private let multi: Result<CurlMulti, UpstreamError>

    private init() {
        do throws(UpstreamError) {
            multi = .success(try CurlMulti(maxCachedConnections: 16))
        } catch {
            multi = .failure(error)
        }
    }

    /// Sends `method` to `url` with `headers` and `body` (nil: no body), and reads the answer whole.
    ///
    /// - Parameters:
    ///   - allowPlainHTTP: false limits the call to `https://`.
    ///   - timeoutNanoseconds: the whole exchange's limit, connection and TLS handshake included.
    ///   - maxResponseBytes: a body above this, counted as it arrives, fails with `.responseTooLarge`.
    public func fetch(_ method: String, _ url: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8]? = nil,
                      allowPlainHTTP: Bool = true, timeoutNanoseconds: UInt64,
                      maxResponseBytes: Int = CurlFetchClient.defaultMaximumResponseSize) async throws(CurlFetchError) -> CurlFetchResponse {
        guard let scheme = Self.scheme(of: url), scheme == "https" || (allowPlainHTTP && scheme == "http") else {
            throw .invalidURL
        }
        let multi: CurlMulti
        do { multi = try self.multi.get() } catch { throw .failed(error) }
        let milliseconds = Int(min(max(timeoutNanoseconds / 1_000_000, 1), UInt64(Int32.max)))
        var limits = CurlTransfer.Limits()
        limits.connectTimeoutMilliseconds = milliseconds
        limits.firstByteNanoseconds = timeoutNanoseconds
        limits.bodyIdleNanoseconds = timeoutNanoseconds
        let limit = max(0, maxResponseBytes)
        // Read whole: no pause below the cap (the piece that crosses it ends the fetch).
        limits.wholeBodyLimit = limit
        limits.downloadBuffer = limit < Int.max ? limit + 1 : limit
        let transfer = CurlTransfer(multi: multi, limits: limits)
        let plan = CurlRequestPlan(url: url, method: method, headers: headers, body: body,
                                   protocols: allowPlainHTTP ? "http,https" : "https", totalTimeoutMilliseconds: milliseconds)
        let result: Result<CurlFetchResponse, CurlFetchError> = await withTaskCancellationHandler {
            multi.post(.start(transfer, plan))
            do throws(CurlFetchError) {
                return .success(try await Self.read(transfer, limit: limit))
            } catch {
                return .failure(error)
            }
        } onCancel: {
            transfer.cancel()
        }
        transfer.cancel()
        if case .failure = result, Task.isCancelled { throw .cancelled }
        return try result.get()
    }

    private static func read(_ transfer: CurlTransfer, limit: Int) async throws(CurlFetchError) -> CurlFetchResponse {
        let whole: (HTTPResponseHead, [UInt8])?
        do { whole = try await transfer.awaitWhole() } catch { throw fetchError(error) }
        guard let (head, body) = whole else { throw .responseTooLarge(limit: limit) }
        return CurlFetchResponse(status: head.status, headers: head.headers, body: body)
    }

    private static func fetchError(_ error: UpstreamError) -> CurlFetchError {
        switch error {
        case .connectTimeout, .firstByteTimeout, .bodyTimeout: .timeout
        case .invalidRequest: .invalidURL
        default: .failed(error)
        }
    }

    /// The URL's scheme, lowercased: the letters before `://`.
    private static func scheme(of url: String) -> String? {
        guard let colon = url.utf8.firstIndex(of: UInt8(ascii: ":")), url.utf8[colon...].starts(with: "://".utf8) else {
            return nil
        }
        return String(url[..<colon]).lowercased()
    }
}
