import GatehouseCore
import GatehouseOIDC
import Logging
import Synchronization

/// The gateway's own access tokens from the client-credentials grant (RFC 6749 §4.4), one per
/// `scope=`/`audience=` pair of the `auth=client` routes.
///
/// A token is reused until shortly before it expires (``AccessTokenRenewal``), and fetched
/// single-flight: whatever the number of concurrent requests, one grant per pair is in flight and
/// every request waits for its answer. A failed grant is not remembered (the next request asks
/// again); while the previous token has not expired yet it is still used. The tokens never leave
/// the process except as the upstream's `Authorization`: not in logs, not to the browser.
public final class ClientTokenCache: Sendable {
    /// Asks the provider for a token (the token client of the loaded provider metadata in production).
    public typealias Fetch = @Sendable (ClientCredentialsGrant) async throws -> TokenResponse

    /// Why no token could be had; `description` is safe to log and names no secret.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    struct Token: Sendable {
        let authorization: String
        let expiresAt: Int64
        let lifetime: Int64
    }

    private struct State {
        var tokens: [ClientCredentialsGrant: Token] = [:]
        /// Grants sent to the provider (for tests and logs).
        var grants = 0
    }

    /// How long a token without `expires_in` is used: the provider did not say, so not for long.
    static let defaultLifetime: Int64 = 60

    private let state = Mutex(State())
    private let grants = SingleFlight<ClientCredentialsGrant, Result<Token, Failure>>()
    private let fetch: Fetch
    private let margin: Int64
    private let logger: Logger
    /// Unix seconds: the gateway's clock (`GatewayContext.now`).
    private let now: @Sendable () -> Int64

    public init(margin: Int64, logger: Logger, now: @escaping @Sendable () -> Int64, fetch: @escaping Fetch) {
        self.margin = margin
        self.logger = logger
        self.now = now
        self.fetch = fetch
    }

    /// Fetches through the provider's token client once its metadata is loaded.
    public convenience init(provider: ProviderConnection, margin: Int64, logger: Logger, now: @escaping @Sendable () -> Int64) {
        self.init(margin: margin, logger: logger, now: now) { grant in
            try await provider.clients().tokens.clientCredentials(scope: grant.scope, audience: grant.audience)
        }
    }

    /// How many grants were started.
    public var grantCount: Int { state.withLock { $0.grants } }

    /// The cached `Authorization` value for `grant` while it is not due for renewal; nil otherwise
    /// (then `authorization(for:)` obtains one).
    public func cached(for grant: ClientCredentialsGrant) -> String? {
        let now = self.now()
        return state.withLock { state in
            guard let token = state.tokens[grant], !isDue(token, now: now) else { return nil }
            return token.authorization
        }
    }

    /// The `Authorization` value (`Bearer …`) for `grant`: cached, or from the one grant in flight.
    public func authorization(for grant: ClientCredentialsGrant) async -> Result<String, Failure> {
        let now = self.now()
        if let authorization = cached(for: grant) { return .success(authorization) }
        let result = await grants.run(grant) { [self] () async -> Result<Token, Failure> in
            // A flight that ended just before this one began may have stored what is needed.
            if let token = state.withLock({ $0.tokens[grant] }), !isDue(token, now: now) { return .success(token) }
            return await obtain(grant)
        }
        switch result {
        case .success(let token): return .success(token.authorization)
        case .failure(let failure):
            // The provider is down, but the token we had has not expired yet: it still works.
            if let previous = state.withLock({ $0.tokens[grant] }), now < previous.expiresAt {
                return .success(previous.authorization)
            }
            return .failure(failure)
        }
    }

    private func isDue(_ token: Token, now: Int64) -> Bool {
        AccessTokenRenewal.isDue(expiresAt: token.expiresAt, lifetime: token.lifetime, margin: margin, now: now)
    }

    /// One grant; stores its token.
    private func obtain(_ grant: ClientCredentialsGrant) async -> Result<Token, Failure> {
        state.withLock { $0.grants += 1 }
        let result: Result<Token, Failure>
        do {
            let response = try await fetch(grant)
            let lifetime = response.expiresIn.map { Int64($0) } ?? Self.defaultLifetime
            result = .success(Token(authorization: "Bearer \(response.accessToken)", expiresAt: self.now() + lifetime,
                                    lifetime: lifetime))
            logger.info("client-credentials token obtained", metadata: [
                "oauth.scope": "\(grant.scope ?? "-")", "oauth.audience": "\(grant.audience ?? "-")",
                "oauth.expires_in": "\(lifetime)"])
        } catch {
            // DiscoveryError and TokenEndpointError descriptions never carry secrets or tokens.
            result = .failure(Failure(description: "\(error)"))
            logger.warning("client-credentials grant failed", metadata: [
                "oauth.scope": "\(grant.scope ?? "-")", "oauth.audience": "\(grant.audience ?? "-")", "error": "\(error)"])
        }
        if case .success(let token) = result { state.withLock { $0.tokens[grant] = token } }
        return result
    }
}
