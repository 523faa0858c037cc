import FoundationEssentials
import GatehouseEncoding
import Synchronization

/// The provider's encryption keys, read from its `jwks_uri` when a request object is to be
/// encrypted.
///
/// A signing key announces its rotation (a token names a new `kid`); an encryption key cannot,
/// because the client starts the exchange. So, as OIDC Core §10.2.1 asks, the set is kept only as
/// long as the JWKS answer's `Cache-Control: max-age` says (at most a day), and fetched again
/// before the next encryption otherwise (`no-store`, `no-cache`, or no header at all). Fetches are
/// single-flight: logins at the same moment share one.
public final class ProviderEncryptionKeySource: Sendable {
    private struct State {
        var keys: [ProviderEncryptionKey] = []
        var freshUntil: Date = .distantPast
        var inFlight: Task<Result<[ProviderEncryptionKey], KeySetError>, Never>?
    }

    /// The longest a `max-age` is believed.
    static let maximumAge: TimeInterval = 86_400

    private let jwksURI: String
    private let http: any ProviderHTTPClient
    private let state = Mutex(State())

    public init(jwksURI: String, http: any ProviderHTTPClient) {
        self.jwksURI = jwksURI
        self.http = http
    }

    /// The encryption keys the provider publishes now (possibly none).
    public func current(now: Date = Date()) async throws(KeySetError) -> [ProviderEncryptionKey] {
        let task = state.withLock { state -> Task<Result<[ProviderEncryptionKey], KeySetError>, Never>? in
            if now < state.freshUntil { return nil }
            if let inFlight = state.inFlight { return inFlight }
            let (uri, http) = (jwksURI, self.http)
            let fetch = Task { () -> Result<[ProviderEncryptionKey], KeySetError> in
                await Self.download(uri, http: http).map { keys, maxAge in
                    self.state.withLock { state in
                        state.keys = keys
                        state.freshUntil = now.addingTimeInterval(maxAge)
                        state.inFlight = nil
                    }
                    return keys
                }
            }
            state.inFlight = fetch
            return fetch
        }
        guard let task else { return state.withLock { $0.keys } }
        let result = await task.value
        if case .failure = result { state.withLock { $0.inFlight = nil } }
        return try result.get()
    }

    private static func download(_ uri: String, http: any ProviderHTTPClient) async -> Result<([ProviderEncryptionKey], TimeInterval), KeySetError> {
        await KeySet.fetchDocument(uri, http: http).map { response in
            (ProviderEncryptionKey.keys(inJWKS: response.body), cacheLifetime(response.header("Cache-Control")))
        }
    }

    /// How long a JWKS answer may be kept by its `Cache-Control` (RFC 9111 §5.2.2): `max-age`
    /// (at most ``maximumAge``) unless `no-store` or `no-cache`; 0 without the header.
    static func cacheLifetime(_ header: String?) -> TimeInterval {
        guard let header else { return 0 }
        var maxAge: TimeInterval = 0
        for directive in header.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace().lowercased() }
            switch parts.first {
            case "no-store", "no-cache": return 0
            case "max-age":
                guard parts.count == 2, let seconds = Int(parts[1].filter { $0 != "\"" }),
                      seconds >= 0 else { return 0 }
                maxAge = min(TimeInterval(seconds), maximumAge)
            default: continue
            }
        }
        return maxAge
    }
}
