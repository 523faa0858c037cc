/// One header field of a provider request or response.
public struct ProviderHTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A request to the OpenID provider (discovery, JWKS, token, revocation).
///
/// Its description names only the method and URL: bodies carry codes, verifiers and secrets.
/// What a call to the provider is for.
public enum ProviderOperation: String, Sendable, CaseIterable {
    case discovery, jwks, token, refresh, userinfo, par, revocation
    case tokenExchange = "token_exchange"

    /// The operation of a token-endpoint request with this `grant_type`.
    public static func ofGrant(_ grantType: String?) -> ProviderOperation {
        switch grantType {
        case "refresh_token": .refresh
        case "urn:ietf:params:oauth:grant-type:token-exchange": .tokenExchange
        default: .token
        }
    }
}

public struct ProviderHTTPRequest: Sendable, Equatable, CustomStringConvertible {
    public enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
    }

    public var method: Method
    public var url: String
    public var headers: [ProviderHTTPHeader]
    public var body: [UInt8]
    /// What the call is for (a trace span's `gatehouse.operation`); every caller in the gateway
    /// says it, nil is left to tests of the transport alone.
    public var operation: ProviderOperation?

    public init(method: Method, url: String, headers: [ProviderHTTPHeader] = [], body: [UInt8] = [],
                operation: ProviderOperation? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.operation = operation
    }

    /// The first value of `name`, compared without ASCII case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The query is left out: a `GET` token request (`GATEHOUSE_TOKEN_REQUEST=get`) carries the
    /// code and verifier there.
    public var description: String { "\(method.rawValue) \(ProviderHTTPRequest.withoutQuery(url))" }

    /// `url` up to its `?` (or `#`): what may be logged of a provider URL.
    public static func withoutQuery(_ url: String) -> String {
        String(url.prefix { $0 != "?" && $0 != "#" })
    }
}

/// The provider's answer, with the body already read (and capped by the client).
public struct ProviderHTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [ProviderHTTPHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [ProviderHTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of `name`, compared without ASCII case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Why a provider call produced no HTTP response. `unreachable` and `timeout` map to `502`
/// at `/callback` (SPEC); the others are operator problems worth a log line.
public enum ProviderTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No connection (DNS, refused, TLS failure, connection lost); the text says which.
    case unreachable(String)
    /// No complete answer within `GATEHOUSE_PROVIDER_TIMEOUT`.
    case timeout
    /// The answer's body exceeded the client's cap; the provider is misbehaving or hostile.
    case responseTooLarge(limit: Int)
    /// The URL could not be used (it comes from discovery or configuration).
    case invalidURL(String)
    /// The calling task was cancelled.
    case cancelled
    /// `limit` provider calls were in flight already: refused without calling the provider.
    case overloaded(limit: Int)

    public var description: String {
        switch self {
        case .unreachable(let reason): "provider unreachable: \(reason)"
        case .timeout: "provider did not answer in time (GATEHOUSE_PROVIDER_TIMEOUT)"
        case .responseTooLarge(let limit): "provider response larger than \(limit) bytes"
        case .invalidURL(let url): "invalid provider URL \(ProviderHTTPRequest.withoutQuery(url))"
        case .cancelled: "provider call cancelled"
        case .overloaded(let limit): "\(limit) provider calls in flight already (GATEHOUSE_PROVIDER_MAX_IN_FLIGHT)"
        }
    }
}

/// Sends one request to the OpenID provider. Implementations follow no redirects and cap the
/// body, so a provider (or whoever answers in its place) cannot steer or exhaust the gateway.
public protocol ProviderHTTPClient: Sendable {
    func send(_ request: ProviderHTTPRequest) async throws(ProviderTransportError) -> ProviderHTTPResponse
}
