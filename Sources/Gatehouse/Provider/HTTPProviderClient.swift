import GatehouseCore
import GatehouseOIDC
import GatehouseTime
import HTTP1
import HTTPClient

/// ``ProviderHTTPClient`` on the gateway's own HTTP/1.1 client (`FetchClient`: OpenSSL with the
/// system CA bundle parsed once, kept connections, on the calling request's event loop).
///
/// - Each call is limited to `timeout` seconds (`GATEHOUSE_PROVIDER_TIMEOUT`), connection included.
/// - Redirects are never followed: a `3xx` is returned as it is, so a token request (with its
///   code, verifier or secret) never travels to another URL (RFC 9700 §4.11).
/// - Bodies above `maximumResponseSize` (default 1 MiB) are cut off with
///   ``ProviderTransportError/responseTooLarge(limit:)``.
/// - No cookies, no cache, no proxy from the environment, no content decoding.
/// - At most `maxInFlight` calls at once (`GATEHOUSE_PROVIDER_MAX_IN_FLIGHT`): past that a call
///   fails at once (``ProviderTransportError/overloaded(limit:)``) instead of queuing behind a
///   provider that has slowed down, so a login storm or a slow provider cannot pile up requests.
///
/// For example: `let http = HTTPProviderClient(timeout: 10)`.
public struct HTTPProviderClient: ProviderHTTPClient {
    public static let defaultMaximumResponseSize = FetchClient.defaultMaximumResponseSize

    public let timeout: Int
    public let maximumResponseSize: Int
    public let maxInFlight: Int
    private let inFlight = InFlightCount()

    public init(timeout: Int, maximumResponseSize: Int = HTTPProviderClient.defaultMaximumResponseSize,
                maxInFlight: Int = 64) {
        self.timeout = max(1, timeout)
        self.maximumResponseSize = max(0, maximumResponseSize)
        self.maxInFlight = max(1, maxInFlight)
    }

    public func send(_ request: ProviderHTTPRequest) async throws(ProviderTransportError) -> ProviderHTTPResponse {
        guard inFlight.enter(limit: maxInFlight) else { throw .overloaded(limit: maxInFlight) }
        defer { inFlight.leave() }
        var headers = HTTPHeaders(minimumCapacity: request.headers.count)
        for header in request.headers { headers.add(header.name, header.value) }
        // URLSession named itself, and some providers' firewalls refuse a request without one.
        if !headers.contains("User-Agent") { headers.add("User-Agent", "gatehouse") }
        let answer: FetchResponse
        do {
            answer = try await FetchClient.shared.fetch(
                request.method.rawValue, request.url, headers: headers,
                body: request.method == .post ? request.body : nil,
                timeoutNanoseconds: TimeUnits.nanoseconds(seconds: timeout), maxResponseBytes: maximumResponseSize)
        } catch {
            throw Self.transportError(error, url: request.url)
        }
        return ProviderHTTPResponse(status: answer.status,
                                    headers: answer.headers.map { ProviderHTTPHeader($0.name, $0.value) },
                                    body: answer.body)
    }

    private static func transportError(_ error: FetchError, url: String) -> ProviderTransportError {
        switch error {
        case .invalidURL: .invalidURL(url)
        case .timeout: .timeout
        case .responseTooLarge(let limit): .responseTooLarge(limit: limit)
        case .cancelled: .cancelled
        case .failed(let cause): .unreachable(cause.description)
        }
    }
}
