import FoundationEssentials
import GatehouseCore
import GatehouseOIDC
import GatehouseTime
import Logging
import Synchronization

/// Everything needed to talk to the provider once its metadata is known.
public struct ProviderClients: Sendable {
    public let metadata: ProviderMetadata
    public let tokens: TokenClient
    public let idTokens: IDTokenValidator
    public let logoutTokens: LogoutTokenValidator
    /// Set when UserInfo is to be called after login and refresh (`GATEHOUSE_USERINFO`).
    public let userinfo: UserInfoClient?
    /// Sign in with Apple: its claims are read as `AppleIdentity` says, at login and at refresh.
    public var appleIdentity = false
    /// A provider without ID tokens (GitHub): the user's identity comes from its user API.
    public var userAPI: GitHubUserAPI?
    /// `GATEHOUSE_REQUEST_OBJECT=on` or `reference`: the key the request objects are signed with.
    public var requestObjectKey: ClientSigningKey?
    /// `GATEHOUSE_REQUEST_OBJECT_ENCRYPTION=on`: where the provider's encryption keys are read.
    public var requestObjectEncryptionKeys: ProviderEncryptionKeySource?
    /// `GATEHOUSE_CLAIMS_REQUEST`, compact JSON.
    public var claimsRequest: String?
}

/// The provider's discovery document and keys, loaded in the background.
///
/// The gateway starts even when the provider is down: discovery (with the JWKS) is retried with
/// exponential back-off (1 s doubling to 60 s), `/readyz` reports 503 with the reason until it
/// succeeds, and `/login`, `/callback` and `/backchannel-logout` may start one attempt on demand
/// once the back-off has passed. Attempts are single-flight: whatever the request rate, at most one
/// fetch is in flight, and requests during the back-off get the last failure at once instead of a
/// fetch each (review issue 10, item 6). Once loaded, the document is refreshed periodically so key
/// and endpoint changes at the provider are picked up.
public final class ProviderConnection: Sendable {
    /// Where loading stands, for `/readyz` and the error pages.
    public enum Status: Sendable {
        case loaded
        /// No attempt has finished yet.
        case loading
        /// The last attempt failed for this reason.
        case failed(DiscoveryError)
    }

    private struct State {
        var clients: ProviderClients?
        var inFlight: Task<Result<ProviderClients, DiscoveryError>, Never>?
        var lastError: DiscoveryError?
        /// No on-demand attempt before this instant after a failure.
        var retryAt: Date?
        var delay: TimeInterval = 0
        /// Attempts started (for tests and logs).
        var attempts = 0
    }

    /// The first and the largest wait between failed attempts.
    static let initialRetryDelay: TimeInterval = 1
    static let maximumRetryDelay: TimeInterval = 60

    private let configuration: GatehouseConfiguration
    private let http: any ProviderHTTPClient
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let state = Mutex(State())
    private let loader = Mutex<Task<Void, Never>?>(nil)
    /// How often a loaded document is fetched again.
    private let refreshInterval: Duration = .seconds(3600)

    public init(configuration: GatehouseConfiguration, http: any ProviderHTTPClient, logger: Logger,
                clock: any GatewayClock = SystemClock()) {
        self.configuration = configuration
        self.http = http
        self.logger = logger
        // The OIDC layer measures in `Date` (JWT NumericDate), read from the gateway's clock.
        now = { Date(timeIntervalSince1970: clock.unixTime()) }
    }

    /// The loaded clients, if discovery has succeeded.
    public var current: ProviderClients? { state.withLock { $0.clients } }

    public var isLoaded: Bool { current != nil }

    public var status: Status {
        state.withLock { state in
            if state.clients != nil { return .loaded }
            if let error = state.lastError { return .failed(error) }
            return .loading
        }
    }

    /// How many discovery attempts were started.
    public var attempts: Int { state.withLock { $0.attempts } }

    /// Starts the background loader (idempotent).
    public func start() {
        loader.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await self.run() }
        }
    }

    public func stop() {
        loader.withLock { $0?.cancel() }
    }

    /// The clients, loading the document now if it is not loaded yet: joins an attempt under way,
    /// and during the back-off after a failure throws that failure without contacting the provider.
    public func clients() async throws(DiscoveryError) -> ProviderClients {
        try await attempt(respectingBackOff: true).get()
    }

    private func attempt(respectingBackOff: Bool, reload: Bool = false) async -> Result<ProviderClients, DiscoveryError> {
        let started = now()
        let decision = state.withLock { state -> Result<Task<Result<ProviderClients, DiscoveryError>, Never>, DiscoveryError>? in
            if let task = state.inFlight { return .success(task) }
            if !reload, state.clients != nil { return nil }
            if respectingBackOff, let retryAt = state.retryAt, started < retryAt, let error = state.lastError {
                return .failure(error)
            }
            state.attempts += 1
            let task = Task { [self] in await self.fetch() }
            state.inFlight = task
            return .success(task)
        }
        switch decision {
        case nil:
            if let clients = current { return .success(clients) }
            return await attempt(respectingBackOff: respectingBackOff, reload: reload)
        case .failure(let error)?:
            return .failure(error)
        case .success(let task)?:
            return await task.value
        }
    }

    /// One discovery + JWKS fetch; records its outcome and the next back-off.
    private func fetch() async -> Result<ProviderClients, DiscoveryError> {
        let result: Result<ProviderClients, DiscoveryError>
        do { result = .success(try await build()) } catch { result = .failure(error) }
        let finished = now()
        let delay = state.withLock { state -> TimeInterval in
            state.inFlight = nil
            switch result {
            case .success(let clients):
                state.clients = clients
                state.lastError = nil
                state.retryAt = nil
                state.delay = 0
            case .failure(let error):
                state.lastError = error
                state.delay = state.delay == 0 ? Self.initialRetryDelay : min(state.delay * 2, Self.maximumRetryDelay)
                state.retryAt = finished.addingTimeInterval(state.delay)
            }
            return state.delay
        }
        switch result {
        case .success:
            logger.info("provider metadata loaded", metadata: ["oauth.issuer": "\(configuration.issuer)"])
        case .failure(let error):
            logger.warning(error.isMisconfiguration ? "provider misconfigured; retrying" : "provider discovery failed; retrying",
                           metadata: ["oauth.issuer": "\(configuration.issuer)",
                                      "error": "\(configuration.idp.ownVariableNames(in: "\(error)"))",
                                      "retry.seconds": "\(Int(delay))"])
        }
        return result
    }

    private func build() async throws(DiscoveryError) -> ProviderClients {
        let metadata = try await configuration.discoverProvider(http: http)
        if configuration.idp.pushedAuthorization == .on, metadata.pushedAuthorizationRequestEndpoint == nil {
            throw .requiredFeatureMissing(feature: "pushed authorization requests (RFC 9126)",
                                          field: "pushed_authorization_request_endpoint", variable: "GATEHOUSE_PAR",
                                          otherValues: "auto or off")
        }
        if configuration.idp.dpop == .on, !metadata.takesES256DPoPProofs {
            throw .requiredFeatureMissing(feature: "DPoP proofs signed with ES256 (RFC 9449)",
                                          field: "ES256 in dpop_signing_alg_values_supported", variable: "GATEHOUSE_DPOP",
                                          otherValues: "off")
        }
        let method = GatehouseOIDC.ClientAuthMethod(rawValue: configuration.clientAuthMethod.rawValue) ?? .none
        if let problem = Self.authMethodProblem(metadata: metadata, method: method) {
            logger.warning("the provider does not list the configured token endpoint authentication method",
                           metadata: ["oauth.issuer": "\(configuration.issuer)",
                                      "problem": "\(configuration.idp.ownVariableNames(in: problem))"])
        }
        var tokens: TokenClient
        do {
            var signingKey: ClientSigningKey?
            if method == .privateKeyJWT, let pem = configuration.clientPrivateKeyPEM {
                let algorithm = Self.clientKeyAlgorithm(configuration, pem: pem, metadata: metadata)
                signingKey = try await ClientSigningKey(pem: pem, keyID: configuration.clientKeyID, algorithm: algorithm)
                if let algorithm, let problem = Self.keyAlgorithmProblem(metadata: metadata, algorithm: algorithm) {
                    logger.warning("the provider does not list the client key's signing algorithm",
                                   metadata: ["oauth.issuer": "\(configuration.issuer)",
                                              "problem": "\(configuration.idp.ownVariableNames(in: problem))"])
                }
            }
            tokens = try TokenClient(metadata: metadata, clientID: configuration.clientID,
                                     clientSecret: configuration.clientSecret, authMethod: method, http: http,
                                     signingKey: signingKey, generatedSecret: try await Self.appleClientSecret(configuration),
                                     now: now)
        } catch {
            throw .malformedDocument("token client: \(error)")
        }
        if configuration.securityProfile == .fapi2 { tokens.assertionAudience = metadata.issuer }
        tokens.tokenRequestMethod = configuration.tokenRequestHTTPMethod
        // With a client secret the symmetric key managements (A128KW, A256KW) need no configured key.
        let decrypter = configuration.clientEncryptionKeyPEMs.isEmpty && configuration.clientSecret == nil ? nil
            : JWEDecrypter(keys: configuration.clientEncryptionKeyPEMs.compactMap { try? ClientEncryptionKey(pem: $0) },
                           clientSecret: configuration.clientSecret)
        tokens.decrypter = decrypter
        let keys = KeySet(metadata: metadata, http: http, configuredAlgorithms: configuration.idTokenAlgorithms, now: now)
        // Entra's template document behind a one-tenant issuer: tokens must be that tenant's.
        let tokenIssuer = configuration.issuerPolicy.tokenIssuer(documentIssuer: metadata.issuer,
                                                                 configured: configuration.issuer)
        let userinfo = try userinfoClient(metadata: metadata, keys: keys, issuer: tokenIssuer, decrypter: decrypter)
        let userAPI = configuration.idp.apiURL.map {
            GitHubUserAPI(baseURL: $0, http: http, readsOrganizations: configuration.scopes.contains("read:org"))
        }
        // Without OpenID Connect there are no keys to fetch: no token is ever verified with them.
        if userAPI == nil {
            do { try await keys.refresh() } catch {
                throw .malformedDocument("jwks_uri: \(error)")
            }
        }
        var clients = ProviderClients(
            metadata: metadata, tokens: tokens,
            idTokens: IDTokenValidator(issuer: tokenIssuer, clientID: configuration.clientID, keySet: keys,
                                       issuerPolicy: configuration.issuerPolicy),
            logoutTokens: LogoutTokenValidator(issuer: tokenIssuer, clientID: configuration.clientID, keySet: keys),
            userinfo: userinfo)
        clients.appleIdentity = configuration.idp.profile.name == .apple
        clients.userAPI = userAPI
        clients.claimsRequest = configuration.idp.claimsRequest.flatMap { try? ClaimsRequest.validated($0).get() }
        if let problem = Self.requestObjectProblem(configuration, metadata: metadata) { throw problem }
        clients.requestObjectKey = try await requestObjectKey(metadata: metadata)
        clients.requestObjectEncryptionKeys = requestObjectEncryptionKeys(metadata: metadata)
        return clients
    }

    /// UserInfo's client when it is to be called (`GATEHOUSE_USERINFO`), with what opens and
    /// verifies its answers.
    private func userinfoClient(metadata: ProviderMetadata, keys: KeySet, issuer: String,
                                decrypter: JWEDecrypter?) throws(DiscoveryError) -> UserInfoClient? {
        guard configuration.userinfo.applies(endpoint: metadata.userinfoEndpoint, scopes: configuration.scopes) else { return nil }
        guard let endpoint = metadata.userinfoEndpoint else {
            throw .missingEndpoint(field: "userinfo_endpoint (GATEHOUSE_USERINFO=true needs it)",
                                   variable: "GATEHOUSE_USERINFO_ENDPOINT")
        }
        var client = UserInfoClient(endpoint: endpoint, http: http, signed: UserInfoClient.SignedResponses(
            keySet: keys, issuer: issuer, clientID: configuration.clientID))
        client.decrypter = decrypter
        let logger = self.logger
        client.onSkippedClaimsSource = { reason in
            logger.warning("a UserInfo claims source was left out", metadata: ["reason": "\(reason)"])
        }
        return client
    }

    /// The key request objects are signed with (`GATEHOUSE_REQUEST_OBJECT=on` or `reference`), else nil.
    private func requestObjectKey(metadata: ProviderMetadata) async throws(DiscoveryError) -> ClientSigningKey? {
        guard configuration.idp.requestObject.signs, let pem = configuration.clientPrivateKeyPEM else { return nil }
        do {
            return try await ClientSigningKey(pem: pem, keyID: configuration.clientKeyID,
                                              algorithm: Self.clientKeyAlgorithm(configuration, pem: pem, metadata: metadata))
        } catch {
            throw .malformedDocument("request object key: \(error)")
        }
    }

    /// Where the provider's encryption keys are read (`GATEHOUSE_REQUEST_OBJECT_ENCRYPTION=on`; its
    /// metadata already checked by `requestObjectProblem`).
    private func requestObjectEncryptionKeys(metadata: ProviderMetadata) -> ProviderEncryptionKeySource? {
        guard configuration.idp.requestObjectEncryption == .on else { return nil }
        return ProviderEncryptionKeySource(jwksURI: metadata.jwksURI, http: http)
    }

    /// Whether the provider's metadata allows the request objects configured: fetched by reference
    /// (`request_uri_parameter_supported` not false), encrypted with a key management Gatehouse
    /// uses; nil when it does (for `serve` and `check` alike).
    public static func requestObjectProblem(_ configuration: GatehouseConfiguration, metadata: ProviderMetadata) -> DiscoveryError? {
        if configuration.idp.requestObject == .reference, metadata.requestURIParameterSupported == false {
            return .featureNotOffered(setting: "GATEHOUSE_REQUEST_OBJECT=reference", feature: "request objects fetched by reference",
                                      field: "request_uri_parameter_supported", instead: "set GATEHOUSE_REQUEST_OBJECT=on (by value)")
        }
        let listed = metadata.requestObjectEncryptionAlgValuesSupported ?? []
        if configuration.idp.requestObjectEncryption == .on, !KeyEncryption.allCases.contains(where: { listed.contains($0.rawValue) }) {
            return .featureNotOffered(setting: "GATEHOUSE_REQUEST_OBJECT_ENCRYPTION=on",
                                      feature: "request objects encrypted with \(KeyEncryption.allCases.map(\.rawValue).joined(separator: ", "))",
                                      field: "request_object_encryption_alg_values_supported",
                                      instead: "set GATEHOUSE_REQUEST_OBJECT_ENCRYPTION=off")
        }
        return nil
    }

    /// A configuration problem the provider's metadata is not needed to see (the `private_key_jwt`
    /// key), for `serve` and `check` to refuse at start; nil when none.
    public static func clientCredentialProblem(_ configuration: GatehouseConfiguration) -> String? {
        for (index, pem) in configuration.clientEncryptionKeyPEMs.enumerated() {
            do { _ = try ClientEncryptionKey(pem: pem) } catch {
                guard case .unusableKey(let why) = error else { return "\(error)" }
                return "GATEHOUSE_CLIENT_ENCRYPTION_KEY\(index == 0 ? "" : "_PREVIOUS"): \(why)"
            }
        }
        if let text = configuration.idp.claimsRequest, case .failure(let problem) = ClaimsRequest.validated(text) {
            return "GATEHOUSE_CLAIMS_REQUEST: \(problem)"
        }
        if configuration.idp.requestObject.signs, let pem = configuration.clientPrivateKeyPEM,
           let problem = ClientSigningKey.problem(pem: pem, requested: ClientSigningKey.Algorithm(rawValue: configuration.idp.clientKeyAlgorithm.rawValue),
                                                  fapi2: configuration.securityProfile == .fapi2) {
            return problem
        }
        if configuration.idp.profile.signsClientSecret {
            guard let pem = configuration.clientPrivateKeyPEM, ClientSigningKey.keyType(pem: pem) == .p256 else {
                return "GATEHOUSE_CLIENT_PRIVATE_KEY: Sign in with Apple signs its client secret with a P-256 key (the .p8 file of the key GATEHOUSE_APPLE_KEY_ID names)"
            }
            return nil
        }
        guard configuration.clientAuthMethod == .privateKeyJWT, let pem = configuration.clientPrivateKeyPEM else { return nil }
        return ClientSigningKey.problem(pem: pem, requested: ClientSigningKey.Algorithm(rawValue: configuration.idp.clientKeyAlgorithm.rawValue),
                                        fapi2: configuration.securityProfile == .fapi2)
    }

    /// Sign in with Apple's signed client secret (`AppleClientSecret`), nil for other profiles.
    static func appleClientSecret(_ configuration: GatehouseConfiguration) async throws(TokenEndpointError) -> AppleClientSecret? {
        let idp = configuration.idp
        guard idp.profile.signsClientSecret, let pem = idp.clientPrivateKeyPEM, let teamID = idp.appleTeamID,
              let keyID = idp.appleKeyID else { return nil }
        let key = try await ClientSigningKey(pem: pem, keyID: keyID, algorithm: .es256)
        return AppleClientSecret(teamID: teamID, clientID: configuration.clientID, key: key)
    }

    /// What the client key signs assertions with (`GATEHOUSE_CLIENT_KEY_ALG`, or chosen for the key
    /// and the provider); nil when `pem` is no usable key (``clientCredentialProblem(_:)`` says so).
    public static func clientKeyAlgorithm(_ configuration: GatehouseConfiguration, pem: String,
                                          metadata: ProviderMetadata) -> ClientSigningKey.Algorithm? {
        guard let type = ClientSigningKey.keyType(pem: pem) else { return nil }
        return ClientSigningKey.algorithm(for: type,
                                          requested: ClientSigningKey.Algorithm(rawValue: configuration.idp.clientKeyAlgorithm.rawValue),
                                          fapi2: configuration.securityProfile == .fapi2,
                                          advertised: metadata.tokenEndpointAuthSigningAlgValuesSupported)
    }

    /// Discovery §3: when `token_endpoint_auth_signing_alg_values_supported` is listed and lacks the
    /// client key's algorithm, the token endpoint will likely refuse its assertions; nil otherwise.
    public static func keyAlgorithmProblem(metadata: ProviderMetadata, algorithm: ClientSigningKey.Algorithm) -> String? {
        guard let listed = metadata.tokenEndpointAuthSigningAlgValuesSupported, !listed.contains(algorithm.rawValue) else { return nil }
        return "the client key signs \(algorithm.rawValue) (GATEHOUSE_CLIENT_KEY_ALG) but the provider's "
            + "token_endpoint_auth_signing_alg_values_supported lists only \(listed.joined(separator: ", "))"
    }

    /// Discovery §3: when `token_endpoint_auth_methods_supported` is listed and lacks the configured
    /// method, the token endpoint will likely refuse the client; nil when listed and included, or
    /// not listed at all.
    public static func authMethodProblem(metadata: ProviderMetadata, method: GatehouseOIDC.ClientAuthMethod) -> String? {
        guard let listed = metadata.tokenEndpointAuthMethodsSupported,
              !metadata.supportsTokenEndpointAuthMethod(method) else { return nil }
        return "GATEHOUSE_CLIENT_AUTH_METHOD is \(method.rawValue) but the provider's token_endpoint_auth_methods_supported lists only \(listed.joined(separator: ", "))"
    }

    private func run() async {
        while !Task.isCancelled {
            if isLoaded {
                try? await Task.sleep(for: refreshInterval)
                _ = await attempt(respectingBackOff: false, reload: true)
                continue
            }
            _ = await attempt(respectingBackOff: true)
            if isLoaded { continue }
            let wait = state.withLock { $0.retryAt?.timeIntervalSince(now()) } ?? Self.initialRetryDelay
            try? await Task.sleep(for: .milliseconds(Int(max(wait, 0.05) * 1000)))
        }
    }
}
