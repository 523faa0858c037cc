import FoundationEssentials
import GatehouseCore
import GatehouseOIDC
import GatehouseSessions
import HTTP1
import HTTPServer
import GatehouseEncoding

/// `GET /login[?provider=NAME][&returnTo=/path]`: starts an Authorization Code + PKCE login (RFC 7636,
/// RFC 9700 §2.1.1) at the provider named (the only one without `GATEHOUSE_PROVIDERS`); with several
/// and none named, answers the chooser page.
struct LoginEndpoint {
    let context: GatewayContext

    /// How long a pending login may wait for its callback.
    static let pendingLifetime: Int64 = 600

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        let query = QueryParameters(request.head.query)
        switch chosen(query) {
        case .answer(let response): return response
        case .login(let provider, let returnTo, let stepUp, let extra):
            return await start(at: provider, returnTo: returnTo, stepUp: stepUp, query: query, extra: extra,
                               request: request)
        }
    }

    private enum Choice {
        /// An answer without a login: a refusal, or the providers' chooser page.
        case answer(HTTPResponse)
        /// A login at this provider, returning there, with that step-up and these parameters
        /// beyond `GATEHOUSE_LOGIN_PARAMS` (a third-party login's `login_hint`).
        case login(RegisteredProvider, returnTo: String, stepUp: StepUpPolicy?, extra: [(String, String)])
    }

    /// Where the login goes and comes back: the provider (named, initiated by issuer, the only one,
    /// or the chooser), the page to return to, and the step-up asked for.
    private func chosen(_ query: QueryParameters) -> Choice {
        // `returnTo` must be a local path (or a page of a `GATEHOUSE_CORS_ORIGINS` origin): an open
        // redirect here would send users anywhere after login.
        var requested: String?
        if query.contains("returnTo") {
            guard let single = query.single("returnTo") else { return .answer(invalidReturnTo()) }
            requested = single
        }
        let initiated: ThirdPartyLogin?
        switch thirdParty(query) {
        case .refused(let page): return .answer(page)
        case .initiated(let found): initiated = found
        case .none: initiated = nil
        }
        if let target = initiated?.returnTo { requested = target }
        guard let returnTo = ReturnTo.validate(requested, allowedOrigins: context.configuration.cors.origins) else {
            return .answer(invalidReturnTo())
        }
        let pairs = query.pairs.map { ($0.name, $0.value) }
        // Step-up (SPEC "Sessions the SPA controls"): `acr_values` and `max_age` always pass, and the
        // callback then requires the ID token to satisfy them.
        let stepUp: StepUpPolicy?
        do {
            stepUp = try StepUpPolicy.requested(acrValues: pairs.filter { $0.0 == "acr_values" }.map(\.1),
                                                maxAge: pairs.filter { $0.0 == "max_age" }.map(\.1))
        } catch {
            return .answer(invalidParameters())
        }
        let extra = initiated?.loginHint.map { [("login_hint", $0)] } ?? []
        if let initiated, let provider = context.providers.provider(named: initiated.provider) {
            return .login(provider, returnTo: returnTo, stepUp: stepUp, extra: extra)
        }
        if query.contains("provider") {
            guard let name = query.single("provider"), let named = context.providers.provider(named: name) else {
                return .answer(HTMLPage.error(status: 400, title: "Unknown sign-in provider",
                                              message: "This sign-in link names a provider this site does not offer."))
            }
            return .login(named, returnTo: returnTo, stepUp: stepUp, extra: extra)
        }
        guard context.providers.named else { return .login(context.providers.first, returnTo: returnTo, stepUp: stepUp, extra: extra) }
        // The chooser keeps what any provider's login may take; each provider's `/login` filters again.
        let passed = try? LoginParameters.selectAllowingSilent(
            from: pairs, allowed: context.providers.all.flatMap(\.configuration.loginParams))
        guard let passed else { return .answer(invalidParameters()) }
        // A route's step-up link has no `provider=`: the chooser's links carry the step-up, or
        // the login they start would satisfy nothing and the route would ask again.
        let stepUpPassed = passed.filter { $0.0 != "acr_values" && $0.0 != "max_age" } + (stepUp?.authorizationParameters ?? [])
        return .answer(ProviderEndpoints.chooser(context.providers, returnTo: requested == nil ? nil : returnTo,
                                                 passing: stepUpPassed))
    }

    private enum Initiation {
        case none
        case initiated(ThirdPartyLogin)
        case refused(HTTPResponse)
    }

    /// A third-party initiated login (`iss=`, OpenID Connect Core §4); `.none` without `iss`.
    private func thirdParty(_ query: QueryParameters) -> Initiation {
        guard query.contains("iss") else { return .none }
        guard let iss = query.single("iss"), query.count("login_hint") <= 1, query.count("target_link_uri") <= 1 else {
            return .refused(invalidParameters())
        }
        let providers = context.providers.all.map { (name: $0.name, issuer: $0.configuration.issuer) }
        switch ThirdPartyLogin.resolve(iss: iss, loginHint: query.single("login_hint"), targetLinkURI: query.single("target_link_uri"),
                                       providers: providers, named: query.single("provider"),
                                       publicOrigin: context.configuration.publicURL.origin,
                                       corsOrigins: context.configuration.cors.origins) {
        case .success(let login): return .initiated(login)
        case .failure:
            return .refused(HTMLPage.error(status: 400, title: "Unknown sign-in provider",
                                           message: "This sign-in link names an issuer this site does not sign in with."))
        }
    }

    /// A page that ends a login before it started (as an error value).
    struct Refusal: Error { let response: HTTPResponse }

    /// Where the browser goes for `parameters`: them signed as a request object when configured
    /// (RFC 9101; encrypted to the provider too when configured), by reference to the object hosted
    /// here or by value, pushed to the provider when it takes PAR (the browser then carries a
    /// reference only), else in the URL; how long the login may wait (a pushed request's lifetime);
    /// and the object to host with the pending login, when it is passed by reference.
    private func authorizationURL(_ parameters: [(String, String)], stateHash: String, provider: RegisteredProvider,
                                  clients: ProviderClients) async -> Result<(String, Int64, hosted: String?), Refusal> {
        let configuration = provider.configuration
        var parameters = parameters
        var hosted: String?
        let pushes = configuration.idp.pushedAuthorization.pushes(endpoint: clients.metadata.pushedAuthorizationRequestEndpoint)
        if let key = clients.requestObjectKey {
            let object: String
            switch await requestObject(parameters, key: key, provider: provider, clients: clients) {
            case .success(let made): object = made
            case .failure(let refusal): return .failure(refusal)
            }
            // With PAR the pushed request is already a reference: the object goes in it by value.
            if configuration.idp.requestObject == .reference, !pushes {
                hosted = object
                let requestURI = context.configuration.publicURL.origin + "/request-object/" + stateHash
                parameters = RequestObject.referenceParameters(parameters, requestURI: requestURI)
            } else {
                parameters = RequestObject.outerParameters(parameters, requestObject: object)
            }
        }
        return await redirect(parameters, provider: provider, clients: clients).map { ($0.0, $0.1, hosted: hosted) }
    }

    /// The request object for `parameters`: signed with the client key, then encrypted to the
    /// provider when `GATEHOUSE_REQUEST_OBJECT_ENCRYPTION=on`.
    private func requestObject(_ parameters: [(String, String)], key: ClientSigningKey, provider: RegisteredProvider,
                               clients: ProviderClients) async -> Result<String, Refusal> {
        let signed: String
        do {
            signed = try await RequestObject.signed(parameters, clientID: provider.configuration.clientID,
                                                    audience: clients.metadata.issuer, key: key, now: Date())
        } catch {
            return .failure(refusal("the request object could not be signed", provider: provider, error: error,
                                    status: 500, message: "The sign-in request could not be made."))
        }
        guard let keys = clients.requestObjectEncryptionKeys else { return .success(signed) }
        do {
            return .success(try await RequestObject.encrypted(signed, metadata: clients.metadata, keys: keys))
        } catch {
            return .failure(refusal("the request object could not be encrypted to the provider", provider: provider, error: error,
                                    status: 502, message: "The sign-in provider's keys could not be used. Try again later.",
                                    upstreamError: "jwks"))
        }
    }

    /// A login ended before the browser left: logged (and counted as the provider's failure when
    /// it was one), answered with a page that says only what the user can do.
    private func refusal(_ why: String, provider: RegisteredProvider, error: any Error, status: Int, message: String,
                         upstreamError: String? = nil) -> Refusal {
        context.logger.error("login: \(why)", metadata: ["oauth.provider": "\(provider.name)", "error": "\(error)"])
        if let upstreamError { context.metrics.upstreamError(kind: upstreamError) }
        return Refusal(response: HTMLPage.error(status: status, title: "Sign-in unavailable", message: message))
    }

    /// The provider's authorization URL for `parameters`, pushed first when it takes PAR.
    private func redirect(_ parameters: [(String, String)], provider: RegisteredProvider,
                          clients: ProviderClients) async -> Result<(String, Int64), Refusal> {
        let configuration = provider.configuration
        let parEndpoint = clients.metadata.pushedAuthorizationRequestEndpoint
        guard configuration.idp.pushedAuthorization.pushes(endpoint: parEndpoint), let parEndpoint else {
            return .success((PercentEncoding.appendingQuery(parameters, to: clients.metadata.authorizationEndpoint), Self.pendingLifetime))
        }
        // RFC 9126: the request goes to the provider directly, authenticated; the browser carries
        // only a reference to it (nothing to read, change or leak in the URL).
        do {
            let pushed = try await clients.tokens.pushAuthorizationRequest(parameters, to: parEndpoint)
            let url = AuthorizationRequest.pushedURL(metadata: clients.metadata, clientID: configuration.clientID,
                                                     requestURI: pushed.requestURI)
            // The pushed request ends at its `expires_in`: so does the login waiting for it.
            return .success((url, min(Self.pendingLifetime, Int64(pushed.expiresIn))))
        } catch {
            return .failure(refusal("the pushed authorization request failed", provider: provider, error: error, status: 502,
                                    message: "The sign-in provider did not accept the sign-in request. Try again later.",
                                    upstreamError: "pushed_authorization_request"))
        }
    }

    /// The login itself: the authorization request (pushed when the provider takes PAR), the
    /// pending login stored, the browser sent to the provider.
    private func start(at provider: RegisteredProvider, returnTo: String, stepUp: StepUpPolicy?, query: QueryParameters,
                       extra: [(String, String)], request: HTTPRequest) async -> HTTPResponse {
        let pairs = query.pairs.map { ($0.name, $0.value) }
        let configuration = provider.configuration
        // LOGIN_PARAMS: only the listed names pass (and `prompt=none`, the silent sign-in, always);
        // everything else in the query is ignored.
        let loginParameters: [(String, String)]
        do {
            loginParameters = try LoginParameters.selectAllowingSilent(from: pairs, allowed: configuration.loginParams)
                .filter { $0.0 != "acr_values" && $0.0 != "max_age" && !extra.map(\.0).contains($0.0) }
                + (stepUp?.authorizationParameters ?? []) + extra
        } catch {
            return invalidParameters()
        }

        let clients: ProviderClients
        do {
            clients = try await provider.connection.clients()
        } catch {
            context.logger.error("login: provider discovery failed",
                                 metadata: ["oauth.provider": "\(provider.name)", "error": "\(error)"])
            return ProviderErrorPage.page(for: error)
        }
        var (parameters, secrets) = AuthorizationRequest.parameters(
            clientID: configuration.clientID, redirectURI: configuration.redirectURI, scopes: configuration.scopes,
            extraParameters: LoginParameters.merged(configured: configuration.authParams, login: loginParameters),
            responseMode: configuration.idp.responseMode == .formPost ? ResponseMode.formPost.rawValue : nil,
            openIDConnect: configuration.idp.profile.openIDConnect)
        if let claims = clients.claimsRequest { parameters.append(("claims", claims)) }
        let stateHash = SecretHash.hex(of: secrets.state)
        let url: String, pendingLifetime: Int64, hostedObject: String?
        switch await authorizationURL(parameters, stateHash: stateHash, provider: provider, clients: clients) {
        case .success(let found): (url, pendingLifetime, hostedObject) = found
        case .failure(let page): return page.response
        }

        // One binding value per browser, shared by the logins pending in its tabs.
        let existing = CookieParser.values(named: context.cookie.loginBindingName, in: request.head.headers)
            .first { LoginBinding.isWellFormed($0) }
        let binding = existing ?? RandomToken.make(bytes: 32)
        let now = context.now()
        var pending = PendingLogin(stateHash: stateHash, bindingHash: SecretHash.hex(of: binding),
                                   codeVerifier: secrets.codeVerifier.value, nonce: secrets.nonce, returnTo: returnTo,
                                   createdAt: now, expiresAt: now + pendingLifetime)
        pending.provider = provider.name
        pending.requestObject = hostedObject
        pending.requiredClaims = LoginClaimChecks.required(by: loginParameters, profile: configuration.provider)
        if let stepUp {
            pending.acrValues = stepUp.acrValues
            pending.maxAge = stepUp.maxAge
        }
        do {
            try await context.sessions.savePendingLogin(pending)
        } catch {
            context.logger.error("login: cannot store the pending login", metadata: ["error": "\(error)"])
            guard error.isUnavailable else {
                return HTMLPage.error(status: 500, title: "Sign-in failed", message: "The login could not be started.")
            }
            return Responses.sessionStoreUnavailable(html: true)
        }
        context.metrics.loginStarted(provider: context.providers.metricsLabel(provider.name))
        return Responses.redirect(url, cookies: [context.cookie.setLoginBinding(
            binding, crossSitePost: configuration.idp.responseMode == .formPost)])
    }

    private func invalidParameters() -> HTTPResponse {
        HTMLPage.error(status: 400, title: "Invalid sign-in link",
                       message: "A sign-in parameter is repeated, too long or malformed.")
    }

    private func invalidReturnTo() -> HTTPResponse {
        HTMLPage.error(status: 400, title: "Invalid sign-in link",
                       message: "The page to return to after signing in must be a path on this site.")
    }
}

/// The short-lived cookie that ties a pending login to the browser that started it.
enum LoginBinding {
    static func isWellFormed(_ value: String) -> Bool {
        value.utf8.count == 43 && value.utf8.allSatisfy { b in
            (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || (b >= 48 && b <= 57) || b == 45 || b == 95
        }
    }
}
