import Logging
import GatehouseEncoding

extension GatehouseConfiguration {
    /// Reads and validates the configuration from `environment`, reporting every problem at once.
    ///
    /// Values are trimmed of surrounding whitespace; an empty value counts as unset.
    /// - Parameters:
    ///   - environment: the process environment (or a test dictionary).
    ///   - requireSecretKey: true for commands that open sessions (`serve`); a given key is
    ///     validated either way.
    /// - Returns: the configuration, or ``ConfigurationErrors`` listing each issue with its variable.
    public static func load(environment: [String: String], requireSecretKey: Bool) -> Result<GatehouseConfiguration, ConfigurationErrors> {
        var r = EnvironmentReader(environment)

        let (named, idps) = r.providers()
        let securityProfile = r.choice("GATEHOUSE_SECURITY_PROFILE", default: SecurityProfile.none, expected: "none or fapi2")
        let providerTimeout = r.duration("GATEHOUSE_PROVIDER_TIMEOUT", default: 10, allowZero: false)
        let refreshMargin = r.duration("GATEHOUSE_REFRESH_MARGIN", default: 60, allowZero: true)

        // Browser-facing
        let publicURL = r.publicURL()
        let (listen, metricsListen, listenerTLS) = r.listeners()
        let publicDir = r.value("GATEHOUSE_PUBLIC_DIR") ?? "Public"
        let cookieDomain = r.cookieDomain(publicURL: publicURL)
        let cookieName = r.cookieName(publicURL: publicURL, domain: cookieDomain ?? nil)
        let cors = r.corsPolicy(publicURL: publicURL)
        let sameSite = r.sameSite()
        let csrfHeader = r.csrfHeader()
        let hsts = r.strictTransportSecurity(publicURL: publicURL)
        let postLogout = r.postLogoutRedirectURI(publicURL: publicURL)

        // Sessions
        let database = r.value("GATEHOUSE_DATABASE") ?? "gatehouse.sqlite"
        if let problem = DatabaseSetting.problem(in: database) { r.fail("GATEHOUSE_DATABASE", problem) }
        let secretKey = r.secretKey("GATEHOUSE_SECRET_KEY", required: requireSecretKey)
        let previousKey = r.secretKey("GATEHOUSE_SECRET_KEY_PREVIOUS", required: false)
        let idle = r.duration("GATEHOUSE_SESSION_IDLE", default: 3_600, allowZero: false)
        let lifetime = r.duration("GATEHOUSE_SESSION_LIFETIME", default: 86_400, allowZero: false)
        let persistent = r.choice("GATEHOUSE_SESSION_PERSISTENT", default: SessionCookiePersistence.browserSession,
                                  expected: "true or false")
        // An idle timeout longer than the lifetime is harmless: the absolute lifetime ends the session
        // first (the default idle of 1h with a short lifetime must stay a valid combination).
        _ = (idle, lifetime)

        // Proxy
        let routes = r.routes()
        let maxBody = r.byteSize("GATEHOUSE_MAX_BODY", default: 10 << 20)
        let trustedProxies = r.trustedProxies()
        let upstreamTimeout = r.duration("GATEHOUSE_UPSTREAM_TIMEOUT", default: 30, allowZero: false)

        let tuning = r.tuning(csrfHeader: csrfHeader)

        // Logging
        let logLevel = r.logLevel()
        let logFormat = r.logFormat()

        let contentSecurityPolicy = r.contentSecurityPolicy()
        r.refuseRouteProblems(routes: routes, providers: idps, named: named, securityProfile: securityProfile)

        var everyProvider = idps.compactMap { $0 }
        if let securityProfile, securityProfile == .fapi2 {
            r.applyFAPI2(securityProfile, to: &everyProvider, named: named != nil, publicURL: publicURL)
        }
        guard r.issues.isEmpty, everyProvider.count == idps.count, let idp = everyProvider.first, let publicURL, let listen, let cookieName, let sameSite, let csrfHeader,
              let postLogout, let providerTimeout, let refreshMargin, let idle, let lifetime,
              let maxBody, let upstreamTimeout, let logLevel, let logFormat, let tuning,
              let persistent, let cookieDomain, let cors
        else {
            return .failure(ConfigurationErrors(issues: r.uniqueIssues))
        }
        var configuration = GatehouseConfiguration(
            idp: idp, providerTimeout: providerTimeout, refreshMargin: refreshMargin,
            publicURL: publicURL, listen: listen, publicDir: publicDir, cookieName: cookieName,
            cookieSameSite: sameSite, csrfHeader: csrfHeader, postLogoutRedirectURI: postLogout,
            strictTransportSecurity: hsts,
            databasePath: database, secretKey: secretKey, previousSecretKey: previousKey,
            sessionIdle: idle, sessionLifetime: lifetime, routes: routes, maxBody: maxBody,
            trustedProxies: trustedProxies, upstreamTimeout: upstreamTimeout, logLevel: logLevel, logFormat: logFormat)
        configuration.namedProviderList = named == nil ? [] : everyProvider
        configuration.contentSecurityPolicy = contentSecurityPolicy
        configuration.sessionCookiePersistence = persistent
        configuration.cookieDomain = cookieDomain
        configuration.cors = cors
        configuration.metricsListen = metricsListen
        configuration.listenerTLS = listenerTLS
        configuration.securityProfile = securityProfile ?? .none
        tuning(&configuration)
        return .success(configuration)
    }
}

/// Reads one variable at a time and collects issues; each parse returns nil on failure so that
/// later checks can still run and report their own problems.
struct EnvironmentReader {
    let environment: [String: String]
    var issues: [ConfigurationIssue] = []
    /// Set while one of `GATEHOUSE_PROVIDERS` is read: provider variables then come from its prefix.
    var providerScope: String?

    init(_ environment: [String: String]) { self.environment = environment }

    mutating func fail(_ variable: String, _ message: String) {
        issues.append(ConfigurationIssue(variable: reportedName(variable), message: message))
    }

    /// The issues, each once (a shared default read for every provider is reported once).
    var uniqueIssues: [ConfigurationIssue] {
        var seen: Set<String> = []
        return issues.filter { seen.insert($0.variable + "\u{0}" + $0.message).inserted }
    }

    /// The trimmed value; nil when unset or blank. In a provider's scope a provider variable is the
    /// provider's own (`GATEHOUSE_IDP_<NAME>_…`), else the unprefixed default where one is allowed.
    func value(_ name: String) -> String? {
        raw(name).flatMap { raw in
            let trimmed = raw.trimmingConfigurationWhitespace()
            return trimmed.isEmpty ? nil : String(trimmed)
        }
    }

    /// The untrimmed value as `value` chooses it (the provider's own variable when it is set).
    func raw(_ name: String) -> String? {
        guard let own = scopedName(name) else { return environment[name] }
        if let mine = environment[own], !mine.trimmingConfigurationWhitespace().isEmpty { return mine }
        return Self.perProviderOnly.contains(name) || Self.notInherited.contains(name) ? nil : environment[name]
    }

    mutating func required(_ name: String) -> String? {
        guard let v = value(name) else {
            fail(name, "is required")
            return nil
        }
        return v
    }

    /// `ISSUER`, or the profile's `fallback` when unset (Apple has one issuer for every client).
    mutating func issuer(default fallback: String? = nil) -> String? {
        let name = "GATEHOUSE_ISSUER"
        guard let text = fallback.map({ value(name) ?? $0 }) ?? required(name) else { return nil }
        let url: AbsoluteURL
        do { url = try AbsoluteURL(parsing: text) } catch {
            fail(name, "\(ConfigurationIssue.quote(text)) \(error.description)")
            return nil
        }
        var problems: [String] = []
        if !url.isHTTPS && !url.isLoopbackHost {
            problems.append("must use https (plain http is allowed only for localhost, 127.0.0.0/8 and [::1])")
        }
        if url.hasUserInfo { problems.append("must not contain user information (user@)") }
        if url.query != nil || url.fragment != nil { problems.append("must not have a query or fragment") }
        for p in problems { fail(name, "\(ConfigurationIssue.quote(text)) \(p)") }
        return problems.isEmpty ? text : nil
    }

    mutating func clientAuthMethod(hasSecret: Bool) -> ClientAuthMethod? {
        let name = "GATEHOUSE_CLIENT_AUTH_METHOD"
        guard let text = value(name) else { return hasSecret ? .clientSecretBasic : ClientAuthMethod.none }
        guard let method = ClientAuthMethod(rawValue: text.lowercased()) else {
            fail(name, "\(ConfigurationIssue.quote(text)) is not one of client_secret_basic, client_secret_post, client_secret_jwt, private_key_jwt, none")
            return nil
        }
        if method != .none && method != .privateKeyJWT && !hasSecret {
            fail(name, "is \(method.rawValue) but GATEHOUSE_CLIENT_SECRET is not set")
            return nil
        }
        return method
    }

    /// `SCOPES`, with `openid` first for an OpenID Connect provider (and never added for another).
    mutating func scopes(default defaultText: String = "openid profile email offline_access", openIDConnect: Bool = true) -> [String] {
        let name = "GATEHOUSE_SCOPES"
        let text = raw(name).map { String($0.trimmingConfigurationWhitespace()) } ?? defaultText
        var scopes: [String] = []
        for token in text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) {
            guard OAuthScope.isValidToken(token) else {
                fail(name, "scope \(ConfigurationIssue.quote(token)) contains characters not allowed in a scope (RFC 6749 §3.3)")
                continue
            }
            if !scopes.contains(String(token)) { scopes.append(String(token)) }
        }
        if openIDConnect, !scopes.contains("openid") { scopes.insert("openid", at: 0) }
        return scopes
    }

    /// Parameters Gatehouse sets itself: overriding them would break PKCE, state or nonce binding.
    static let reservedAuthParams: Set<String> = ["response_type", "client_id", "redirect_uri", "scope", "state",
                                                  "nonce", "code_challenge", "code_challenge_method"]

    mutating func authParams(default defaultText: String? = nil) -> [(String, String)] {
        let name = "GATEHOUSE_AUTH_PARAMS"
        guard var text = value(name) ?? defaultText else { return [] }
        if text.hasPrefix("?") { text.removeFirst() }
        var params: [(String, String)] = []
        for pair in text.split(separator: "&") where !pair.isEmpty {
            let rawKey: Substring, rawValue: Substring
            if let eq = pair.firstIndex(of: "=") {
                rawKey = pair[..<eq]
                rawValue = pair[pair.index(after: eq)...]
            } else {
                rawKey = pair
                rawValue = ""
            }
            guard let key = PercentEncoding.decodeString(rawKey, plusAsSpace: true),
                  let val = PercentEncoding.decodeString(rawValue, plusAsSpace: true)
            else {
                fail(name, "\(ConfigurationIssue.quote(pair)) has a malformed percent-encoding")
                continue
            }
            guard !key.isEmpty else {
                fail(name, "\(ConfigurationIssue.quote(pair)) has an empty parameter name")
                continue
            }
            if Self.reservedAuthParams.contains(key) {
                let hint = key == "scope" ? " (use GATEHOUSE_SCOPES)" : ""
                fail(name, "\(ConfigurationIssue.quote(key)) is set by Gatehouse itself and cannot be overridden\(hint)")
                continue
            }
            params.append((key, val))
        }
        return params
    }

    mutating func duration(_ name: String, default defaultSeconds: Int, allowZero: Bool) -> Int? {
        guard let text = value(name) else { return defaultSeconds }
        return quantity(name, text, allowZero: allowZero, DurationParser.seconds,
                        expected: "a duration (use 90s, 30m, 8h, 14d or seconds)")
    }

    /// A whole number from 1 to `maximum`.
    mutating func count(_ name: String, default fallback: Int, maximum: Int) -> Int? {
        guard let text = value(name) else { return fallback }
        guard let number = Int(text), number >= 1, number <= maximum else {
            fail(name, "\(ConfigurationIssue.quote(text)) is not a whole number from 1 to \(maximum)")
            return nil
        }
        return number
    }

    mutating func byteSize(_ name: String, default defaultBytes: Int) -> Int? {
        guard let text = value(name) else { return defaultBytes }
        return quantity(name, text, allowZero: false, ByteSizeParser.bytes,
                        expected: "a size (use bytes, or a number with k, m or g, e.g. 10m)")
    }

    /// `text` parsed as a duration or a size; a failure (or zero, unless `allowZero`) is recorded and
    /// gives nil.
    private mutating func quantity(_ name: String, _ text: String, allowZero: Bool,
                                   _ parse: (String) throws(QuantityParseError) -> Int, expected: String) -> Int? {
        do {
            let quantity = try parse(text)
            if quantity == 0 && !allowZero {
                fail(name, "\(ConfigurationIssue.quote(text)) must be greater than 0")
                return nil
            }
            return quantity
        } catch {
            switch error {
            case .tooLarge: fail(name, "\(ConfigurationIssue.quote(text)) is too large")
            case .empty, .invalid: fail(name, "\(ConfigurationIssue.quote(text)) is not \(expected)")
            }
            return nil
        }
    }

    mutating func publicURL() -> PublicURL? {
        let name = "GATEHOUSE_PUBLIC_URL"
        return parsed(name, value(name) ?? "http://localhost:8080", PublicURL.init(parsing:)) { error in
            switch error {
            case .url(let e): e.description
            case .hasPath: "must be an origin without a path (Gatehouse serves the whole origin)"
            case .hasQueryOrFragment: "must not have a query or fragment"
            case .hasUserInfo: "must not contain user information (user@)"
            }
        }
    }

    mutating func listen(_ name: String = "GATEHOUSE_LISTEN", default fallback: String = "0.0.0.0:8080") -> ListenAddress? {
        return parsed(name, value(name) ?? fallback, ListenAddress.init(parsing:)) { error in
            switch error {
            case .missingPort: "needs a port (e.g. 0.0.0.0:8080 or [::]:8080)"
            case .invalidHost: "needs an IP address (e.g. 0.0.0.0:8080, 127.0.0.1:8080 or [::]:8080)"
            case .invalidPort: "has an invalid port (0-65535)"
            }
        }
    }

    /// `text` parsed by `parse`; a failure is recorded as the quoted value and `reason(error)`, and
    /// gives nil.
    private mutating func parsed<Value, Failure: Error>(_ name: String, _ text: String,
                                                       _ parse: (String) throws(Failure) -> Value,
                                                       reason: (Failure) -> String) -> Value? {
        do {
            return try parse(text)
        } catch {
            fail(name, "\(ConfigurationIssue.quote(text)) \(reason(error))")
            return nil
        }
    }

    /// `name`'s value as one of `Choice`'s raw values, ignoring case; `fallback` when unset.
    mutating func choice<Choice: RawRepresentable<String>>(_ name: String, default fallback: Choice,
                                                           expected: String) -> Choice? {
        guard let text = value(name) else { return fallback }
        guard let choice = Choice(rawValue: text.lowercased()) else {
            fail(name, "\(ConfigurationIssue.quote(text)) is not \(expected)")
            return nil
        }
        return choice
    }

    /// Never echoes the value: it is a secret.
    mutating func secretKey(_ name: String, required: Bool) -> [UInt8]? {
        guard let text = value(name) else {
            if required { fail(name, "is required (generate one with: gatehouse keygen)") }
            return nil
        }
        guard let bytes = Base64.decode(text) else {
            fail(name, "is not valid base64 (generate one with: gatehouse keygen)")
            return nil
        }
        guard bytes.count == 32 else {
            fail(name, "decodes to \(bytes.count) bytes; 32 are required (generate one with: gatehouse keygen)")
            return nil
        }
        return bytes
    }

    mutating func routes() -> [UpstreamRoute] {
        guard let text = value("GATEHOUSE_ROUTES") else { return [] }
        let (routes, errors) = UpstreamRoute.parseList(text)
        for e in errors { fail("GATEHOUSE_ROUTES", e.description) }
        return routes
    }

    /// RFC 6749 §4.4: the client-credentials grant is for confidential clients only. `auth=client`
    /// routes use the first provider.
    mutating func refusePublicClientCredentials(routes: [UpstreamRoute], provider: ProviderSettings) {
        guard provider.clientAuthMethod == ClientAuthMethod.none else { return }
        for route in routes where route.auth.clientGrant != nil {
            let secret = provider.name == ProviderSettings.defaultName
                ? "GATEHOUSE_CLIENT_SECRET" : ProviderSettings.variablePrefix(for: provider.name) + "CLIENT_SECRET"
            fail("GATEHOUSE_ROUTES", "route \(ConfigurationIssue.quote(route.prefix)) uses auth=client, which needs a confidential "
                 + "client: set \(secret) or private_key_jwt")
            return
        }
    }

    mutating func trustedProxies() -> [CIDR] {
        let name = "GATEHOUSE_TRUSTED_PROXIES"
        guard let text = value(name) else { return [] }
        var list: [CIDR] = []
        for raw in text.split(separator: ",") {
            let entry = raw.trimmingConfigurationWhitespace()
            if entry.isEmpty { continue }
            guard let cidr = CIDR(String(entry)) else {
                fail(name, "\(ConfigurationIssue.quote(entry)) is not an IP address or CIDR (e.g. 10.0.0.0/8, ::1/128)")
                continue
            }
            list.append(cidr)
        }
        return list
    }

    mutating func logLevel() -> Logger.Level? {
        choice("GATEHOUSE_LOG_LEVEL", default: .info, expected: "one of trace, debug, info, notice, warning, error, critical")
    }

    mutating func logFormat() -> LogFormat? {
        choice("GATEHOUSE_LOG_FORMAT", default: .json, expected: "json or text")
    }
}

extension EnvironmentReader {
    /// The providers: the one of `GATEHOUSE_*`, or each of `GATEHOUSE_PROVIDERS` with its own
    /// prefix (the names, nil without `GATEHOUSE_PROVIDERS`; nil settings for a provider with problems).
    mutating func providers() -> (named: [String]?, settings: [ProviderSettings?]) {
        let named = providerNames()
        guard let named else { return (nil, [providerSettings(name: ProviderSettings.defaultName)]) }
        for variable in Self.perProviderOnly where value(variable) != nil {
            fail(variable, "cannot be used with GATEHOUSE_PROVIDERS: set \(ProviderSettings.variablePrefix(for: "NAME"))\(variable.dropFirst(10)) for each provider")
        }
        return (named, named.map { name in inProviderScope(name) { $0.providerSettings(name: name) } })
    }

    /// `GATEHOUSE_SECURITY_PROFILE=fapi2`: what it forbids reported under each provider's variables,
    /// and what it implies set (PAR `on`, the profile's ID-token algorithms unless narrowed).
    mutating func applyFAPI2(_ profile: SecurityProfile, to providers: inout [ProviderSettings], named: Bool,
                             publicURL: PublicURL?) {
        for (index, provider) in providers.enumerated() {
            let problems = profile.problems(of: provider, publicURL: publicURL)
            inProviderScope(named ? provider.name : nil) { reader in
                for problem in problems where problem.variable != "GATEHOUSE_PUBLIC_URL" {
                    reader.fail(problem.variable, problem.message)
                }
            }
            if index == 0, let url = problems.first(where: { $0.variable == "GATEHOUSE_PUBLIC_URL" }) {
                fail(url.variable, url.message)
            }
            // FAPI 2.0 requires PAR: `auto` becomes `on`, so a provider without it stops `serve`.
            providers[index].pushedAuthorization = .on
            if providers[index].idTokenAlgorithms == nil {
                providers[index].idTokenAlgorithms = profile.idTokenAlgorithmsDefault
            }
        }
    }
}

extension EnvironmentReader {
    /// The settings with defaults that the configuration takes after it is made: WebSocket idle,
    /// underscore headers, the identity assertion's header and lifetime, CPU placement, and the
    /// bounds under overload (what waits beyond them is refused at once with 503). Nil when one is
    /// invalid (its issue noted).
    /// `METRICS_LISTEN`: `/metrics` on a listener of its own (the public port then answers 404
    /// there), never on the public listener's port.
    mutating func metricsListen(beside listen: ListenAddress?) -> ListenAddress? {
        guard value("GATEHOUSE_METRICS_LISTEN") != nil else { return nil }
        let metricsListen = self.listen("GATEHOUSE_METRICS_LISTEN")
        if let metricsListen, let listen, metricsListen.port == listen.port, metricsListen.port != 0 {
            fail("GATEHOUSE_METRICS_LISTEN", "uses the port of GATEHOUSE_LISTEN (\(listen.port)): give /metrics a port of its own")
        }
        return metricsListen
    }

    /// What the routes ask of the providers and the security profile: `auth=client` routes get
    /// their tokens from the first provider; `providers=` names configured ones; no weakening combination.
    mutating func refuseRouteProblems(routes: [UpstreamRoute], providers: [ProviderSettings?], named: [String]?,
                                      securityProfile: SecurityProfile?) {
        if let first = providers.first ?? nil { refusePublicClientCredentials(routes: routes, provider: first) }
        refuseUnknownRouteProviders(routes: routes, names: named ?? [ProviderSettings.defaultName])
        refuseWeakeningRouteCombinations(routes: routes, securityProfile: securityProfile)
    }

    mutating func tuning(csrfHeader: String?) -> (@Sendable (inout GatehouseConfiguration) -> Void)? {
        let websocketIdle = duration("GATEHOUSE_WEBSOCKET_IDLE", default: 600, allowZero: false)
        let underscoreHeaders = choice("GATEHOUSE_FORWARD_UNDERSCORE_HEADERS", default: UnderscoreHeaderPolicy.drop,
                                       expected: "true or false")
        let assertionHeader = self.assertionHeader(csrfHeader: csrfHeader)
        let assertionTTL = duration("GATEHOUSE_ASSERTION_TTL", default: 60, allowZero: false)
        if let assertionTTL, !(5...3_600).contains(assertionTTL) {
            fail("GATEHOUSE_ASSERTION_TTL", "\(assertionTTL)s is outside 5s…1h: a replayed assertion is good for its whole lifetime")
        }
        let cpuAffinity = choice("GATEHOUSE_CPU_AFFINITY", default: CPUAffinityPolicy.auto, expected: "auto or off")
        let routeMaxInFlight = count("GATEHOUSE_ROUTE_MAX_IN_FLIGHT", default: 512, maximum: 1_000_000)
        let providerMaxInFlight = count("GATEHOUSE_PROVIDER_MAX_IN_FLIGHT", default: 64, maximum: 100_000)
        let storeQueue = count("GATEHOUSE_STORE_QUEUE", default: 4_096, maximum: 1_000_000)
        let storeTimeout = duration("GATEHOUSE_STORE_TIMEOUT", default: 10, allowZero: false)
        let encryptionKeys = clientEncryptionKeys()
        guard let websocketIdle, let underscoreHeaders, let assertionHeader, let assertionTTL, let cpuAffinity,
              let routeMaxInFlight, let providerMaxInFlight, let storeQueue, let storeTimeout else { return nil }
        return { configuration in
            configuration.websocketIdle = websocketIdle
            configuration.underscoreHeaders = underscoreHeaders
            configuration.assertionHeader = assertionHeader
            configuration.assertionTTL = assertionTTL
            configuration.cpuAffinity = cpuAffinity
            configuration.routeMaxInFlight = routeMaxInFlight
            configuration.providerMaxInFlight = providerMaxInFlight
            configuration.storeQueue = storeQueue
            configuration.storeTimeout = storeTimeout
            configuration.clientEncryptionKeyPEMs = encryptionKeys
        }
    }
}
