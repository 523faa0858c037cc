import FoundationEssentials
import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import HTTP1
import HTTPServer

/// `GET /callback` (`/callback/NAME` with several providers): completes a login (RFC 6749 §4.1.2,
/// RFC 7636 §4.5, RFC 9207, OIDC Core §3.1.3.7).
///
/// The pending login is consumed before anything else is checked, so a state value works once
/// whatever happens next; a login started at another provider than this callback's is refused
/// before any token request (mix-up defence, RFC 9700 §4.4.2). Every failure answers a small HTML
/// page; the reason goes to the log.
struct CallbackEndpoint {
    let context: GatewayContext
    /// The provider name in the path (`/callback/NAME`); nil for `/callback`, the `default` provider's.
    let path: String?

    /// The provider this callback belongs to.
    private var callbackProvider: String { path ?? ProviderSettings.defaultName }

    enum Failure: Error {
        case missingState, unknownState, wrongBrowser, providerError(String), issuer(AuthorizationResponseIssuer.Problem)
        case missingCode, ambiguousParameters, providerUnreachable(String), providerMisconfigured(String)
        case tokenEndpoint(String), invalidIDToken(String), missingIDToken, userinfo(String), storage(String)
        /// The session store did not answer (down, locked, read-only): `503`, try again.
        case storeUnavailable(String)
        /// The ID token lacks a claim of `GATEHOUSE_REQUIRE_CLAIMS` (wrong Google domain, Entra tenant…).
        case claim(String)
        /// The login started at another provider than this callback's (RFC 9700 §4.4.2).
        case providerMixUp(String)
        /// A step-up login whose ID token has another `acr` than asked for, or an `auth_time`
        /// older than `max_age` (a provider that ignored `acr_values` cannot downgrade it).
        case stepUp(String)
        /// The user signed in but fails a login gate (`GATEHOUSE_ALLOWED_EMAIL_DOMAINS`, `…_EMAILS`,
        /// `…_GROUPS`): `403`, no session.
        case notAllowed(String)
        /// The response came in another mode than the login asked for (`GATEHOUSE_RESPONSE_MODE`).
        case responseMode(String)

        init(_ refusal: AuthorizationResponse.Refusal) {
            switch refusal {
            case .repeatedParameter: self = .ambiguousParameters
            case .missingState: self = .missingState
            case .wrongBrowser: self = .wrongBrowser
            case .providerError(let code): self = .providerError(code)
            case .issuer(let problem): self = .issuer(problem)
            case .missingCode: self = .missingCode
            }
        }

        var reason: String {
            switch self {
            case .missingState: "missing_state"
            case .unknownState: "unknown_or_expired_state"
            case .wrongBrowser: "login_binding_mismatch"
            case .providerError: "provider_error"
            case .issuer(.mismatch): "iss_mismatch"
            case .issuer(.missing): "iss_missing"
            case .missingCode: "missing_code"
            case .ambiguousParameters: "repeated_parameters"
            case .providerUnreachable: "provider_unreachable"
            case .providerMisconfigured: "provider_misconfigured"
            case .tokenEndpoint: "token_endpoint_error"
            case .invalidIDToken: "invalid_id_token"
            case .missingIDToken: "missing_id_token"
            case .userinfo: "userinfo_error"
            case .storage: "storage_error"
            case .storeUnavailable: "store_unavailable"
            case .claim: "claim"
            case .providerMixUp: "provider_mismatch"
            case .stepUp: "step_up_not_satisfied"
            case .notAllowed: "login_not_allowed"
            case .responseMode: "response_mode_mismatch"
            }
        }

        /// What the log says beside `reason`. Every case is listed (no `default`), so a new
        /// failure cannot leave its log line without one by accident.
        var detail: String {
            switch self {
            case .providerError(let d), .providerUnreachable(let d), .providerMisconfigured(let d), .tokenEndpoint(let d),
                 .invalidIDToken(let d), .userinfo(let d), .storage(let d), .storeUnavailable(let d), .claim(let d),
                 .providerMixUp(let d), .stepUp(let d), .notAllowed(let d), .responseMode(let d):
                d
            case .issuer(let problem): problem.description
            case .missingState, .unknownState, .wrongBrowser, .missingCode, .ambiguousParameters, .missingIDToken: ""
            }
        }
    }

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        guard context.providers.provider(named: callbackProvider) != nil else {
            return HTMLPage.error(status: 404, title: "Not found", message: "This sign-in address is not one of this site's.")
        }
        let label = context.providers.metricsLabel(callbackProvider)
        switch await complete(request) {
        case .success(let response):
            context.metrics.loginCompleted(provider: label)
            return response
        case .failure(let failure):
            context.metrics.loginFailed(reason: failure.reason, provider: label)
            context.logger.warning("login failed at callback",
                                   metadata: ["login.failure": "\(failure.reason)", "login.detail": "\(failure.detail)",
                                              "oauth.provider": "\(callbackProvider)"])
            return page(for: failure)
        }
    }

    /// The authorization response as this callback's provider sends it: in the query of a `GET`, or
    /// (`GATEHOUSE_RESPONSE_MODE=form_post`) in the form body of a `POST`. The other method is
    /// refused before any state is looked up: a response is taken only in the mode the login asked for.
    private func authorizationResponse(_ request: HTTPRequest) async -> Result<(AuthorizationResponse, user: String?), Failure> {
        let mode = context.providers.provider(named: callbackProvider)?.configuration.idp.responseMode ?? .query
        guard request.head.method == mode.callbackMethod else {
            return .failure(.responseMode("\(request.head.method) at a callback whose provider uses response_mode=\(mode.rawValue)"))
        }
        let pairs: [(name: String, value: String?)]
        if mode == .formPost {
            guard let body = try? await request.body.collect(limit: 64 * 1024) else {
                return .failure(.responseMode("the form body is missing or larger than 64 KiB"))
            }
            pairs = QueryParameters(form: body).pairs
        } else {
            pairs = QueryParameters(request.head.query).pairs
        }
        // Sign in with Apple's first authorization posts the user's name beside the code (`user`).
        let user = mode == .formPost ? pairs.first { $0.name == "user" }?.value : nil
        do { return .success((try AuthorizationResponse(parameters: pairs), user)) } catch { return .failure(Failure(error)) }
    }

    private func complete(_ request: HTTPRequest) async -> Result<HTTPResponse, Failure> {
        let response: AuthorizationResponse, userField: String?
        switch await authorizationResponse(request) {
        case .success(let parsed): (response, userField) = parsed
        case .failure(let failure): return .failure(failure)
        }
        let now = context.now()
        let pending: PendingLogin
        do {
            guard let found = try await context.sessions.takePendingLogin(stateHash: SecretHash.hex(of: response.state), now: now) else {
                return .failure(.unknownState)
            }
            pending = found
        } catch {
            return .failure(error.isUnavailable ? .storeUnavailable("\(error)") : .storage("\(error)"))
        }
        // Mix-up defence: the response must come back where its login went. A code from one
        // provider delivered to another's callback reaches neither token endpoint (the state is
        // spent already, so it cannot be replayed at the right callback either).
        guard pending.provider == callbackProvider, let provider = context.providers.provider(named: pending.provider) else {
            return .failure(.providerMixUp("login started at \(pending.provider), answered at the callback of \(callbackProvider)"))
        }
        let bindings = CookieParser.values(named: context.cookie.loginBindingName, in: request.head.headers)
        do {
            try response.checkBrowserAndOutcome(presentedBindingHashes: bindings.map { SecretHash.hex(of: $0) },
                                                pendingBindingHash: pending.bindingHash)
        } catch {
            // A silent sign-in the provider could not complete without the user (SPEC "Silent
            // login"): back to the SPA with the reason in the fragment, no error page, no session.
            if case .providerError(let code) = error, Self.silentLoginErrors.contains(code) {
                context.logger.info("silent login not possible", metadata: ["oauth.error": "\(code)"])
                return .success(Responses.redirect(pending.returnTo + "#error=" + code))
            }
            return .failure(Failure(error))
        }
        let clients: ProviderClients
        do { clients = try await provider.connection.clients() } catch {
            return .failure(error.isMisconfiguration ? .providerMisconfigured("\(error)") : .providerUnreachable("\(error)"))
        }
        let code: String
        do {
            code = try response.code(expectedIssuer: clients.metadata.issuer,
                                     issuerRequired: clients.metadata.authorizationResponseIssParameterSupported == true)
        } catch {
            return .failure(Failure(error))
        }
        let redeemed: Redeemed
        switch await redeem(code, pending: pending, provider: provider, clients: clients, now: now) {
        case .success(let found): redeemed = found
        case .failure(let failure): return .failure(failure)
        }
        let sessionClaims: [String: JSONValue]
        switch await claimsOfSession(redeemed, userField: userField, provider: provider, clients: clients) {
        case .success(let found): sessionClaims = found
        case .failure(let failure): return .failure(failure)
        }
        return await startSession(redeemed, claims: sessionClaims, pending: pending, provider: provider, request: request, now: now)
    }

    /// What the code was redeemed for: the tokens (a Facebook token already traded for a
    /// long-lived one), the validated ID token and its claims, and the session's DPoP key.
    private struct Redeemed {
        var tokens: TokenResponse
        /// Nil for a provider without OpenID Connect (its claims came from its user API).
        let idToken: String?
        let claims: IDTokenClaims
        let dpop: DPoPKey?
    }

    /// The code exchanged (RFC 6749 §4.1.3, PKCE), the ID token validated (nonce, issuer, audience,
    /// signature), then the login's own conditions: the required claims and the step-up asked for.
    private func redeem(_ code: String, pending: PendingLogin, provider: RegisteredProvider, clients: ProviderClients,
                        now: Int64) async -> Result<Redeemed, Failure> {
        let configuration = provider.configuration
        guard let verifier = CodeVerifier(pending.codeVerifier) else { return .failure(.storage("stored verifier unreadable")) }
        let exchanged: TokenResponse
        // DPoP (RFC 9449): the session's key, made now; the tokens are bound to it from the first.
        let dpop = configuration.idp.dpop == .on ? DPoPKey() : nil
        do {
            exchanged = try await clients.tokens.exchangeCode(code: code, codeVerifier: verifier,
                                                           redirectURI: configuration.redirectURI, dpop: dpop,
                                                           requireIDToken: clients.userAPI == nil)
        } catch {
            if case .transport = error { return .failure(.providerUnreachable("\(error)")) }
            return .failure(.tokenEndpoint("\(error)"))
        }
        let claims: IDTokenClaims
        switch await identity(exchanged, pending: pending, configuration: configuration, clients: clients, now: now) {
        case .success(let found): claims = found
        case .failure(let failure): return .failure(failure)
        }
        if let refusal = Self.loginConditionRefusal(claims, pending: pending, configuration: configuration, now: now) {
            return .failure(refusal)
        }
        var redeemed = Redeemed(tokens: exchanged, idToken: exchanged.idToken, claims: claims, dpop: dpop)
        // Facebook: the one-to-two-hour user token traded for a long-lived one (no refresh tokens
        // exist there). A failed trade keeps the short token: the session then ends with it.
        if configuration.idp.longLivedToken {
            do {
                let longLived = try await clients.tokens.longLivedToken(for: redeemed.tokens.accessToken)
                redeemed.tokens.accessToken = longLived.accessToken
                redeemed.tokens.expiresIn = longLived.expiresIn
                redeemed.tokens.tokenType = longLived.tokenType
            } catch {
                context.logger.warning("long-lived token exchange failed; keeping the short-lived token",
                                       metadata: ["oauth.provider": "\(provider.name)", "error": "\(error)"])
            }
        }
        return .success(redeemed)
    }

    /// Who signed in: the ID token validated (nonce, issuer, audience, signature), or for a provider
    /// without OpenID Connect (GitHub) the user API's answer to the new access token, over TLS to
    /// the configured API (no nonce exists there; state, PKCE and the binding cookie were checked).
    private func identity(_ exchanged: TokenResponse, pending: PendingLogin, configuration: GatehouseConfiguration,
                          clients: ProviderClients, now: Int64) async -> Result<IDTokenClaims, Failure> {
        let instant = Date(timeIntervalSince1970: TimeInterval(now))
        if let userAPI = clients.userAPI {
            do {
                let found = try await userAPI.claims(accessToken: exchanged.accessToken, issuer: configuration.issuer,
                                                     grantedScope: exchanged.scope)
                return .success(IDTokenClaims(userAPIClaims: found, issuer: configuration.issuer,
                                              clientID: configuration.clientID, now: instant))
            } catch {
                if case .transport = error { return .failure(.providerUnreachable("\(error)")) }
                return .failure(.userinfo("\(error)"))
            }
        }
        guard let idToken = exchanged.idToken else { return .failure(.missingIDToken) }
        do {
            return .success(try await clients.idTokens.validate(idToken, expectedNonce: pending.nonce, now: instant))
        } catch {
            return .failure(.invalidIDToken("\(error)"))
        }
    }

    /// The ID token against what this login required, without I/O: the configured and the login's
    /// required claims (`GATEHOUSE_REQUIRE_CLAIMS`), and the step-up asked for (`acr_values`,
    /// `max_age`: the route's own rule, clock skew included, so what passes here passes there).
    static func loginConditionRefusal(_ claims: IDTokenClaims, pending: PendingLogin, configuration: GatehouseConfiguration,
                                      now: Int64) -> Failure? {
        let loginChecks = pending.requiredClaims.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        if let mismatch = RequiredClaims(configuration.requiredClaims + loginChecks).firstMismatch(in: claims.all) {
            return .claim(mismatch)
        }
        guard !pending.acrValues.isEmpty || pending.maxAge != nil else { return nil }
        let policy = StepUpPolicy(acrValues: pending.acrValues, maxAge: pending.maxAge)
        let authenticated = AuthenticationClaims(claims.all)
        let (acr, authTime) = (authenticated.acr, authenticated.authTime)
        guard let shortfall = policy.shortfall(acr: acr, authTime: authTime, now: now) else { return nil }
        return .stepUp("\(shortfall): acr \(acr ?? "absent") / auth_time \(authTime.map(String.init) ?? "absent") "
                       + "for acr_values \(policy.acrValuesParameter) max_age \(policy.maxAge.map(String.init) ?? "-") at \(now)")
    }

    /// The claims the session keeps: the ID token's, merged with UserInfo's (OIDC Core §5.3: its
    /// `sub` must be the ID token's or the login fails), and the login gates checked on them.
    private func claimsOfSession(_ redeemed: Redeemed, userField: String?, provider: RegisteredProvider,
                                 clients: ProviderClients) async -> Result<[String: JSONValue], Failure> {
        let configuration = provider.configuration
        var sessionClaims = redeemed.claims.all
        if let userinfo = clients.userinfo {
            do {
                let extra = try await userinfo.fetch(accessToken: redeemed.tokens.accessToken, expectedSubject: redeemed.claims.sub,
                                                     dpop: DPoPBinding.userinfo(redeemed.tokens.tokenType, key: redeemed.dpop,
                                                                                clients: clients))
                sessionClaims = UserInfoClaims.merge(idToken: redeemed.claims.all, userinfo: extra)
            } catch {
                if case .transport = error { return .failure(.providerUnreachable("\(error)")) }
                return .failure(.userinfo("\(error)"))
            }
        }
        if clients.appleIdentity {
            sessionClaims = AppleIdentity.sessionClaims(sessionClaims, userField: userField)
        }
        // Login gates on the claims the session would have: a verified email, the provider's groups.
        let gate = configuration.idp.loginGate
        if !gate.isOpen, let refusal = gate.refusal(SessionClaims(claims: sessionClaims, provider: provider.name,
                                                                  groupsClaim: configuration.idp.groupsClaim)) {
            return .failure(.notAllowed(refusal))
        }
        return .success(sessionClaims)
    }

    /// A new session (a new id at every login against session fixation; the browser's previous
    /// session goes), its cookie, and the browser sent back to where the login began.
    private func startSession(_ redeemed: Redeemed, claims sessionClaims: [String: JSONValue], pending: PendingLogin,
                              provider: RegisteredProvider, request: HTTPRequest, now: Int64) async -> Result<HTTPResponse, Failure> {
        let previous = await context.sessions.sessionID(in: request.head.headers)
        let id = SessionID.generate()
        let config = provider.configuration
        let claimsJSON: [UInt8]
        do {
            if let written = JSONValueWriter.sortedKeys(sessionClaims) {
                claimsJSON = written
            } else {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                claimsJSON = Array(try encoder.encode(sessionClaims))
            }
        } catch {
            return .failure(.storage("claims: \(error)"))
        }
        let tokens = redeemed.tokens
        var tokenSet = TokenSet(accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, idToken: redeemed.idToken,
                                accessTokenExpiresAt: tokens.expiresIn.map { now + Int64($0) },
                                tokenType: tokens.tokenType, scope: tokens.scope,
                                accessTokenLifetime: tokens.expiresIn.map { Int64($0) })
        tokenSet.dpopKey = redeemed.dpop?.stored
        tokenSet.issuer = config.issuer
        let lifetime = Int64(config.sessionLifetime)
        let newSession = NewSession(idHash: id.hash, sub: redeemed.claims.sub, sid: redeemed.claims.sid, claims: claimsJSON,
                                    tokens: tokenSet, createdAt: now,
                                    idleExpiresAt: SessionLifetime.idleExpiry(slidAt: now, idleSeconds: Int64(config.sessionIdle),
                                                                              expiresAt: now + lifetime),
                                    expiresAt: now + lifetime, provider: provider.name,
                                    userAgent: request.head.headers["User-Agent"])
        do {
            _ = try await context.sessions.createSession(newSession, replacing: previous?.hash)
        } catch {
            return .failure(error.isUnavailable ? .storeUnavailable("\(error)") : .storage("\(error)"))
        }
        context.logger.info("login completed", metadata: ["session.id": "\(id.hashPrefix)", "oauth.provider": "\(provider.name)"])
        return .success(Responses.redirect(pending.returnTo, cookies: [
            context.cookie.set(id.cookieValue, sessionExpiresAt: newSession.expiresAt, now: now),
        ]))
    }

    /// The answers to `prompt=none` that mean "the user has to be there" (OIDC Core §3.1.2.6).
    static let silentLoginErrors: Set<String> = ["login_required", "interaction_required", "consent_required",
                                                 "account_selection_required"]

    private func page(for failure: Failure) -> HTTPResponse {
        switch failure {
        case .providerUnreachable:
            return HTMLPage.error(status: 502, title: "Sign-in is unavailable",
                                  message: "The identity provider could not be reached. Please try again.")
        case .providerMisconfigured:
            return HTMLPage.error(status: 502, title: "Sign-in is misconfigured",
                                  message: "The identity provider's configuration does not match this site's (misconfigured provider). The site's operator has to fix it.")
        case .providerError(let code) where OAuthErrorCode(code) == .accessDenied:
            return HTMLPage.error(status: 400, title: "Sign-in was cancelled",
                                  message: "The identity provider did not sign you in.")
        case .unknownState:
            return HTMLPage.error(status: 400, title: "Sign-in expired",
                                  message: "This sign-in link is unknown, expired or was already used.")
        case .wrongBrowser:
            return HTMLPage.error(status: 400, title: "Sign-in started elsewhere",
                                  message: "This sign-in was started in another browser or its cookie is missing.")
        case .providerMixUp:
            return HTMLPage.error(status: 400, title: "Sign-in failed",
                                  message: "The sign-in answer came back from another provider than the one it was sent to.")
        case .stepUp:
            return HTMLPage.error(status: 400, title: "Sign-in not strong enough",
                                  message: "This part of the site needs a stronger or more recent sign-in than the one the provider reported.")
        case .notAllowed:
            return HTMLPage.error(status: 403, title: "Sign-in not allowed",
                                  message: "Your account signed in, but it is not one this site admits.")
        case .claim:
            return HTMLPage.error(status: 400, title: "Sign-in not allowed",
                                  message: "Your account signed in, but it is not one this site admits (for example another organization or domain).")
        case .storage:
            return HTMLPage.error(status: 500, title: "Sign-in failed", message: "The session could not be stored.")
        case .storeUnavailable:
            return Responses.sessionStoreUnavailable(html: true)
        default:
            return HTMLPage.error(status: 400, title: "Sign-in failed",
                                  message: "The sign-in response could not be accepted.")
        }
    }
}
