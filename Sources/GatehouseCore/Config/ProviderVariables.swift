/// `GATEHOUSE_PROVIDERS` and the provider variables, read for the one provider (`GATEHOUSE_*`) or
/// for each named one (`GATEHOUSE_IDP_<NAME>_*`, an unprefixed variable as every provider's default).
extension EnvironmentReader {
    /// The variables each provider has its own of (`GATEHOUSE_PROVIDER` is `…_PROFILE` there).
    static let providerVariables: Set<String> = Set<String>([
        "GATEHOUSE_ISSUER", "GATEHOUSE_CLIENT_ID", "GATEHOUSE_CLIENT_SECRET", "GATEHOUSE_CLIENT_AUTH_METHOD",
        "GATEHOUSE_CLIENT_PRIVATE_KEY", "GATEHOUSE_CLIENT_KEY_ID", "GATEHOUSE_CLIENT_KEY_ALG", "GATEHOUSE_SCOPES", "GATEHOUSE_AUTH_PARAMS",
        "GATEHOUSE_LOGIN_PARAMS", "GATEHOUSE_REQUIRE_CLAIMS", "GATEHOUSE_LOGOUT_URL", "GATEHOUSE_USERINFO",
        "GATEHOUSE_ID_TOKEN_ALGS", "GATEHOUSE_TOKEN_REQUEST", "GATEHOUSE_PROVIDER", "GATEHOUSE_DISPLAY_NAME",
        "GATEHOUSE_DISCOVERY_URL", "GATEHOUSE_LONG_LIVED_TOKEN", "GATEHOUSE_PAR", "GATEHOUSE_DPOP", "GATEHOUSE_RESPONSE_MODE",
        "GATEHOUSE_GROUPS_CLAIM", "GATEHOUSE_ALLOWED_EMAIL_DOMAINS", "GATEHOUSE_ALLOWED_EMAILS", "GATEHOUSE_ALLOWED_GROUPS",
        "GATEHOUSE_APPLE_TEAM_ID", "GATEHOUSE_APPLE_KEY_ID", "GATEHOUSE_API_URL", "GATEHOUSE_REQUEST_OBJECT",
        "GATEHOUSE_CLAIMS_REQUEST", "GATEHOUSE_REQUEST_OBJECT_ENCRYPTION",
    ]).union(endpointVariables)

    /// Refused beside `GATEHOUSE_PROVIDERS` (SPEC): one issuer and client cannot be every provider's.
    static let perProviderOnly: Set<String> = ["GATEHOUSE_ISSUER", "GATEHOUSE_CLIENT_ID", "GATEHOUSE_CLIENT_SECRET"]

    /// Never another provider's default: they describe one provider only.
    static let notInherited: Set<String> = ["GATEHOUSE_DISPLAY_NAME", "GATEHOUSE_DISCOVERY_URL"]

    /// The provider's own name for `name` in the current scope; nil outside one or for other variables.
    func scopedName(_ name: String) -> String? {
        guard let providerScope, Self.providerVariables.contains(name) else { return nil }
        let suffix = name == "GATEHOUSE_PROVIDER" ? "PROFILE" : String(name.dropFirst("GATEHOUSE_".count))
        return ProviderSettings.variablePrefix(for: providerScope) + suffix
    }

    /// The variable a problem with `name` is reported under: the provider's own unless the value
    /// came from the shared default.
    func reportedName(_ name: String) -> String {
        guard let own = scopedName(name) else { return name }
        let ownSet = environment[own].map { !$0.trimmingConfigurationWhitespace().isEmpty } ?? false
        let sharedSet = environment[name].map { !$0.trimmingConfigurationWhitespace().isEmpty } ?? false
        let inherits = !Self.perProviderOnly.contains(name) && !Self.notInherited.contains(name)
        return !ownSet && sharedSet && inherits ? name : own
    }

    /// `read` with provider variables taken from `name`'s prefix.
    mutating func inProviderScope<T>(_ name: String?, _ read: (inout EnvironmentReader) -> T) -> T {
        providerScope = name
        defer { providerScope = nil }
        return read(&self)
    }

    /// `GATEHOUSE_PROVIDERS`: nil when unset; the names, each once, in configured order.
    mutating func providerNames() -> [String]? {
        let name = "GATEHOUSE_PROVIDERS"
        guard value(name) != nil else { return nil }
        var names: [String] = []
        for entry in listEntries(name) {
            guard ProviderSettings.isValidName(entry) else {
                fail(name, "\(ConfigurationIssue.quote(entry)) is not a provider name (1 to 32 characters of a-z, 0-9 and -)")
                continue
            }
            guard !names.contains(entry) else {
                fail(name, "\(ConfigurationIssue.quote(entry)) is listed twice")
                continue
            }
            names.append(entry)
        }
        if names.isEmpty, issues.allSatisfy({ $0.variable != name }) { fail(name, "lists no provider") }
        return names
    }

    /// One provider's settings from the variables in the current scope; nil after recording issues.
    mutating func providerSettings(name: String) -> ProviderSettings? {
        let before = issues.count
        let profile = providerProfile()
        let issuer = self.issuer(default: profile.defaultIssuer)
        let clientID = required("GATEHOUSE_CLIENT_ID") ?? ""
        if clientID.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            fail("GATEHOUSE_CLIENT_ID", "contains control characters")
        }
        let clientSecret = value("GATEHOUSE_CLIENT_SECRET")
        let apple = appleClientSecret(profile: profile, clientSecret: clientSecret)
        let clientAuthMethod = profile.signsClientSecret ? .clientSecretPost
            : profileAuthMethod(clientAuthMethod(hasSecret: clientSecret != nil), profile: profile, hasSecret: clientSecret != nil)
        let scopes = self.scopes(default: profile.defaultScopes, openIDConnect: profile.openIDConnect)
        let apiURL = self.apiURL(profile: profile)
        let requestObject = self.requestObject(profile: profile)
        let requestObjectEncryption = self.requestObjectEncryption(requestObject: requestObject)
        let authParams = refuseUnsupportedAuthParams(self.authParams(default: profile.defaultAuthParams))
        let endpointOverrides = self.endpointOverrides(profile: profile)
        let discoveryURL = discoveryURLOverride(profile: profile)
        let tokenRequest = self.tokenRequest(profile: profile, method: clientAuthMethod)
        let loginParams = self.loginParams()
        let requiredClaims = self.requiredClaims()
        let logoutURL = self.logoutURL(profile: profile, issuer: issuer)
        let userinfo = userinfoPolicy()
        let idTokenAlgorithms = self.idTokenAlgorithms()
        let clientKey = clientPrivateKey(method: clientAuthMethod, requiredFor: profile.signsClientSecret ? "GATEHOUSE_PROVIDER=apple" : nil)
        let clientKeyAlgorithm = self.clientKeyAlgorithm()
        let longLived = choice("GATEHOUSE_LONG_LIVED_TOKEN", default: profile.name == .facebook ? Toggle.on : .off,
                               expected: "true or false")
        let displayName = self.displayName(name: name, profile: profile)
        let par = choice("GATEHOUSE_PAR", default: PushedAuthorizationMode.auto, expected: "auto, on or off")
        let dpop = choice("GATEHOUSE_DPOP", default: DPoPMode.off, expected: "on or off")
        let responseMode = choice("GATEHOUSE_RESPONSE_MODE", default: profile.defaultResponseMode, expected: "query or form_post")
        let groupsClaim = self.groupsClaim()
        let loginGate = self.loginGate()
        guard issues.count == before, let issuer, let clientAuthMethod, let tokenRequest, let userinfo, let longLived,
              let displayName, let par, let dpop, let clientKeyAlgorithm, let responseMode else { return nil }
        var settings = ProviderSettings(name: name, displayName: displayName, issuer: issuer, clientID: clientID,
                                        clientSecret: clientSecret, clientAuthMethod: clientAuthMethod, scopes: scopes,
                                        authParams: authParams)
        settings.userinfo = userinfo
        settings.idTokenAlgorithms = idTokenAlgorithms
        settings.clientPrivateKeyPEM = clientKey?.pem
        settings.clientKeyID = clientKey?.keyID
        settings.clientKeyAlgorithm = clientKeyAlgorithm
        settings.profile = profile
        settings.endpointOverrides = endpointOverrides
        settings.discoveryURLOverride = discoveryURL
        settings.tokenRequest = tokenRequest
        settings.loginParams = loginParams
        settings.requiredClaims = requiredClaims
        settings.logoutURL = logoutURL
        settings.longLivedToken = longLived == .on
        settings.pushedAuthorization = par
        settings.dpop = dpop
        settings.responseMode = responseMode
        (settings.appleTeamID, settings.appleKeyID) = (apple?.teamID, apple?.keyID)
        settings.apiURL = apiURL
        settings.requestObject = requestObject ?? .off
        settings.requestObjectEncryption = requestObjectEncryption ?? .off
        settings.claimsRequest = value("GATEHOUSE_CLAIMS_REQUEST")
        settings.groupsClaim = groupsClaim
        settings.loginGate = loginGate
        return settings
    }

    /// `CLIENT_KEY_ALG`: `auto` unless set; whether the key can sign with it is checked where the
    /// key is parsed (``ProviderConnection``).
    mutating func clientKeyAlgorithm() -> ClientKeyAlgorithm? {
        let name = "GATEHOUSE_CLIENT_KEY_ALG"
        guard let text = value(name) else { return .auto }
        guard let algorithm = ClientKeyAlgorithm(configured: text) else {
            fail(name, "\(ConfigurationIssue.quote(text)) is not auto, RS256, PS256 or ES256")
            return nil
        }
        return algorithm
    }

    /// `DISPLAY_NAME`: printable text of at most 64 characters; else the profile's name ("Google"),
    /// else the provider's name.
    mutating func displayName(name: String, profile: ProviderProfile) -> String? {
        let variable = "GATEHOUSE_DISPLAY_NAME"
        guard let text = value(variable) else { return profile.displayName ?? name }
        guard text.count <= 64, !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            fail(variable, "must be at most 64 printable characters")
            return nil
        }
        return text
    }

    /// `DISCOVERY_URL`; nil for the issuer's well-known path.
    mutating func discoveryURLOverride(profile: ProviderProfile) -> String? {
        let name = "GATEHOUSE_DISCOVERY_URL"
        guard let text = value(name) else { return nil }
        if let problem = providerURLProblem(text) {
            fail(name, "\(ConfigurationIssue.quote(text)) \(problem)")
            return nil
        }
        return text
    }

    /// `GATEHOUSE_CSP`: any printable header value; nil for the default policy.
    mutating func contentSecurityPolicy() -> String? {
        let name = "GATEHOUSE_CSP"
        guard let text = value(name) else { return nil }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value >= 0x7F }) else {
            fail(name, "must be printable ASCII (a Content-Security-Policy header value)")
            return nil
        }
        return text
    }

    /// A route's `providers=` option names only configured providers.
    mutating func refuseUnknownRouteProviders(routes: [UpstreamRoute], names: [String]) {
        for route in routes {
            for name in route.providers ?? [] where !names.contains(name) {
                fail("GATEHOUSE_ROUTES", "route \(ConfigurationIssue.quote(route.prefix)) allows provider \(ConfigurationIssue.quote(name)), "
                     + "which is not one of GATEHOUSE_PROVIDERS (\(names.joined(separator: ", ")))")
            }
            for name in route.allow?.providerNames ?? [] where !names.contains(name) {
                fail("GATEHOUSE_ROUTES", "route \(ConfigurationIssue.quote(route.prefix)) has allow= naming provider "
                     + "\(ConfigurationIssue.quote(name)), which is not one of the configured providers (\(names.joined(separator: ", ")))")
            }
        }
    }
}

/// A `true`/`false` variable.
enum Toggle: String {
    case on = "true"
    case off = "false"
}

extension GatehouseConfiguration {
    /// The variables each provider has its own of (`GATEHOUSE_IDP_<NAME>_…`; `GATEHOUSE_PROVIDER` is
    /// `…_PROFILE` there): the keys of a provider in the configuration file's `providers:` map.
    public static var providerVariableNames: Set<String> { EnvironmentReader.providerVariables }
}
