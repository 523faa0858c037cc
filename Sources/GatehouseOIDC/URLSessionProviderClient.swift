import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// ``ProviderHTTPClient`` on Foundation's `URLSession` (https through the platform's TLS).
///
/// - Each call is limited to `timeout` (`GATEHOUSE_PROVIDER_TIMEOUT`).
/// - Redirects are never followed: a `3xx` is returned as it is, so a token request (with its
///   code, verifier or secret) never travels to another URL (RFC 9700 §4.11).
/// - Bodies above `maximumResponseSize` (default 1 MiB) are cut off with
///   ``ProviderTransportError/responseTooLarge(limit:)``.
/// - No cookies, no cache.
///
/// For example: `let http = URLSessionProviderClient(timeout: 10)`.
public final class URLSessionProviderClient: ProviderHTTPClient {
    public static let defaultMaximumResponseSize = 1 << 20

    public let timeout: TimeInterval
    public let maximumResponseSize: Int
    private let session: URLSession
    private let exchanges: ProviderSessionDelegate

    public init(timeout: TimeInterval, maximumResponseSize: Int = URLSessionProviderClient.defaultMaximumResponseSize) {
        self.timeout = timeout
        self.maximumResponseSize = max(0, maximumResponseSize)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        exchanges = ProviderSessionDelegate()
        session = URLSession(configuration: configuration, delegate: exchanges, delegateQueue: nil)
    }

    deinit {
        session.invalidateAndCancel()
    }

    public func send(_ request: ProviderHTTPRequest) async throws(ProviderTransportError) -> ProviderHTTPResponse {
        guard let url = URL(string: request.url), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http" else {
            throw .invalidURL(request.url)
        }
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.httpShouldHandleCookies = false
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        if request.method == .post { urlRequest.httpBody = Data(request.body) }

        let task = session.dataTask(with: urlRequest)
        let taskBox = SendableTask(task: task)
        let limit = maximumResponseSize
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<ProviderHTTPResponse, ProviderTransportError>, Never>) in
                exchanges.register(task.taskIdentifier, limit: limit, continuation: continuation)
                task.resume()
            }
        } onCancel: {
            taskBox.task.cancel()
        }
        return try result.get()
    }
}

/// `URLSessionDataTask` is thread-safe but not marked `Sendable` on every platform.
private struct SendableTask: @unchecked Sendable {
    let task: URLSessionDataTask
}

/// Collects each task's response and body, enforcing the size cap and refusing redirects.
private final class ProviderSessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Exchange {
        var continuation: CheckedContinuation<Result<ProviderHTTPResponse, ProviderTransportError>, Never>
        var limit: Int
        var response: HTTPURLResponse?
        var body: [UInt8] = []
        var tooLarge = false
    }

    private let exchanges = Mutex<[Int: Exchange]>([:])

    func register(_ id: Int, limit: Int,
                  continuation: CheckedContinuation<Result<ProviderHTTPResponse, ProviderTransportError>, Never>) {
        exchanges.withLock { $0[id] = Exchange(continuation: continuation, limit: limit) }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        let allow = exchanges.withLock { table -> Bool in
            guard var exchange = table[dataTask.taskIdentifier] else { return false }
            exchange.response = response as? HTTPURLResponse
            if response.expectedContentLength > Int64(exchange.limit) { exchange.tooLarge = true }
            table[dataTask.taskIdentifier] = exchange
            return !exchange.tooLarge
        }
        completionHandler(allow ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let overLimit = exchanges.withLock { table -> Bool in
            guard var exchange = table[dataTask.taskIdentifier], !exchange.tooLarge else { return false }
            if exchange.body.count + data.count > exchange.limit {
                exchange.tooLarge = true
                exchange.body = []
            } else {
                exchange.body.append(contentsOf: data)
            }
            table[dataTask.taskIdentifier] = exchange
            return exchange.tooLarge
        }
        if overLimit { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        exchange.continuation.resume(returning: Self.result(of: exchange, error: error))
    }

    private static func result(of exchange: Exchange, error: (any Error)?) -> Result<ProviderHTTPResponse, ProviderTransportError> {
        if exchange.tooLarge { return .failure(.responseTooLarge(limit: exchange.limit)) }
        if let error { return .failure(transportError(error)) }
        guard let response = exchange.response else { return .failure(.unreachable("no HTTP response")) }
        var headers: [ProviderHTTPHeader] = []
        for (name, value) in response.allHeaderFields {
            headers.append(ProviderHTTPHeader("\(name)", "\(value)"))
        }
        return .success(ProviderHTTPResponse(status: response.statusCode, headers: headers, body: exchange.body))
    }

    private static func transportError(_ error: any Error) -> ProviderTransportError {
        guard let urlError = error as? URLError else { return .unreachable("\(type(of: error))") }
        switch urlError.code {
        case .timedOut: return .timeout
        case .cancelled: return .cancelled
        case .cannotFindHost, .dnsLookupFailed: return .unreachable("cannot resolve the host")
        case .cannotConnectToHost: return .unreachable("connection refused")
        case .networkConnectionLost: return .unreachable("connection lost")
        case .notConnectedToInternet: return .unreachable("no network")
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected:
            return .unreachable("TLS failure (URLError \(urlError.code.rawValue))")
        case .badURL, .unsupportedURL: return .invalidURL(urlError.failingURL?.absoluteString ?? "")
        default: return .unreachable("URLError \(urlError.code.rawValue)")
        }
    }
}
