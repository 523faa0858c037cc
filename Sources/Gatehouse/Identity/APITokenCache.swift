import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import HTTP1
import Logging
import Synchronization

/// The tokens for one API that routes with `exchange=` send instead of the user's own (SPEC
/// "Identity for your own APIs"): from an RFC 8693 token exchange (`exchange=token`) or a
/// refresh-token grant with `resource`/`scope` (`exchange=refresh`).
///
/// Kept per session and route, in memory only (never stored, never logged), until shortly before
/// they expire (``AccessTokenRenewal``); fetched single-flight, so twenty concurrent calls of a
/// session make one grant. A refusal is `403 token_exchange_refused` and leaves the session as it
/// is; an unreachable provider is `502`. A session's tokens go when the session ends.
final class APITokenCache: Sendable {
    struct Refusal: Error {
        let response: HTTPResponse
    }

    private struct Key: Hashable {
        let session: SessionHashKey
        let route: String
    }

    private struct Token {
        let authorization: String
        let renewAt: Int64
        let expiresAt: Int64
    }

    private struct State {
        var tokens: [Key: Token] = [:]
    }

    /// How long a token without `expires_in` is used: the provider did not say, so not for long.
    static let defaultLifetime: Int64 = 60
    static let capacity = 100_000

    private let state = Mutex(State())
    private let fetches = SingleFlight<Key, Result<Token, Refusal>>()
    private let margin: Int64
    private let logger: Logger

    init(margin: Int64, logger: Logger) {
        self.margin = margin
        self.logger = logger
    }

    /// The route's token for the session while it is not yet due for renewal; nil otherwise.
    func cached(for route: UpstreamRoute, idHash: String, now: Int64) -> String? {
        let key = Key(session: SessionHashKey(idHash), route: route.prefix)
        return state.withLock { state in
            guard let token = state.tokens[key], now < token.renewAt else { return nil }
            return token.authorization
        }
    }

    /// The route's token for `session`, obtained when there is none fresh enough.
    func authorization(for route: UpstreamRoute, session: Session, context: GatewayContext) async -> Result<String, Refusal> {
        let now = context.now()
        let key = Key(session: SessionHashKey(session.idHash), route: route.prefix)
        if let authorization = cached(for: route, idHash: session.idHash, now: now) { return .success(authorization) }
        let result = await fetches.run(key) { [self] () async -> Result<Token, Refusal> in
            // A flight that ended just before this one began may have stored what is needed.
            if let token = state.withLock({ $0.tokens[key] }), now < token.renewAt { return .success(token) }
            let result = await self.fetch(for: route, session: session, context: context)
            if case .success(let token) = result { store(token, for: key, now: now) }
            return result
        }
        switch result {
        case .success(let token): return .success(token.authorization)
        case .failure(let refusal):
            // The previous token, while it has not expired, still serves (the provider may be down).
            if refusal.response.status == 502, let token = state.withLock({ $0.tokens[key] }), now < token.expiresAt {
                return .success(token.authorization)
            }
            return .failure(refusal)
        }
    }

    private func store(_ token: Token, for key: Key, now: Int64) {
        state.withLock { state in
            if state.tokens.count >= Self.capacity {
                state.tokens = state.tokens.filter { now < $0.value.expiresAt }
                if state.tokens.count >= Self.capacity { state.tokens.removeAll() }
            }
            state.tokens[key] = token
        }
    }

    /// Forgets the tokens of an ended session (every session's when `idHash` is nil).
    func sessionEnded(idHash: String?) {
        state.withLock { state in
            guard let idHash else { return state.tokens.removeAll() }
            let session = SessionHashKey(idHash)
            state.tokens = state.tokens.filter { $0.key.session != session }
        }
    }

    /// How many tokens are kept (tests).
    var count: Int { state.withLock { $0.tokens.count } }

    private func fetch(for route: UpstreamRoute, session: Session, context: GatewayContext) async -> Result<Token, Refusal> {
        let identity = route.identity
        let response: TokenResponse
        switch identity.exchange {
        case .token?:
            guard let provider = context.providers.provider(named: session.provider) else {
                return .failure(Self.refused("the session's provider is no longer configured"))
            }
            let clients: ProviderClients
            do { clients = try await provider.connection.clients() } catch {
                return .failure(Self.unavailable(route, "\(error)", context: context))
            }
            do {
                response = try await clients.tokens.exchangeToken(subjectToken: session.tokens.accessToken,
                                                                  audience: identity.audience, resource: identity.resource,
                                                                  scope: identity.scope, dpop: DPoPBinding.key(of: session.tokens))
            } catch {
                if case .oauth(let code, _, let status) = error, (400..<500).contains(status) {
                    logger.info("token exchange refused by the provider",
                                metadata: ["route": "\(route.prefix)", "session.id": "\(session.idHash.prefix(8))",
                                           "oauth.error": "\(code)"])
                    context.metrics.upstreamError(kind: "token_exchange_refused")
                    return .failure(Self.refused("The provider refused a token for this API."))
                }
                return .failure(Self.unavailable(route, "\(error)", context: context))
            }
        case .refresh?:
            switch await context.refresher.refreshForAPI(idHash: session.idHash, resource: identity.resource, scope: identity.scope) {
            case .issued(let issued): response = issued
            case .refused(let why):
                logger.info("API token refresh refused", metadata: ["route": "\(route.prefix)",
                                                                    "session.id": "\(session.idHash.prefix(8))", "reason": "\(why)"])
                context.metrics.upstreamError(kind: "token_exchange_refused")
                return .failure(Self.refused("The provider refused a token for this API."))
            case .ended:
                // As for the session's own refresh: the session is over, so is its cookie.
                var response = Responses.unauthenticated
                response.headers.add("Set-Cookie", context.cookie.expire())
                return .failure(Refusal(response: response))
            case .unavailable(let why):
                return .failure(Self.unavailable(route, why, context: context))
            }
        case nil:
            return .failure(Self.refused("This route exchanges no token."))
        }
        let now = context.now()
        let lifetime = response.expiresIn.map(Int64.init) ?? Self.defaultLifetime
        let expiresAt = now + lifetime
        let renewAt = AccessTokenRenewal.dueAt(expiresAt: expiresAt, lifetime: lifetime, margin: margin) ?? expiresAt
        return .success(Token(authorization: DPoPBinding.authorization(response.accessToken, tokenType: response.tokenType),
                              renewAt: renewAt, expiresAt: expiresAt))
    }

    private static func refused(_ description: String) -> Refusal {
        Refusal(response: HTTPResponse.jsonError(status: 403, error: "token_exchange_refused", description: description))
    }

    private static func unavailable(_ route: UpstreamRoute, _ why: String, context: GatewayContext) -> Refusal {
        context.logger.warning("token for an API not obtained", metadata: ["route": "\(route.prefix)", "error": "\(why)"])
        context.metrics.upstreamError(kind: "token_exchange")
        return Refusal(response: HTTPResponse.jsonError(status: 502, error: "token_exchange_failed",
                                                        description: "A token for this API could not be obtained from the provider."))
    }
}
