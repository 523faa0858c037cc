/// Which credentials a route's requests need and which bearer the upstream receives: the `auth=`
/// option of a `GATEHOUSE_ROUTES` entry (SPEC "Route options"; Duende BFF's per-route token types).
///
/// For example: `/reports=https://svc;auth=client;scope=reports.read` is
/// `.client(ClientCredentialsGrant(scope: "reports.read"), sessionRequired: true)`.
public enum RouteAuth: Sendable, Hashable, CustomStringConvertible {
    /// `auth=user` (default): a session and the CSRF header; the user's access token as bearer.
    case user
    /// `auth=optional`: the user's access token when signed in, no `Authorization` otherwise.
    case optional
    /// `auth=none`: no session, no bearer (the browser's cookies and `Authorization` are still removed).
    case none
    /// `auth=client`: the gateway's own client-credentials token (RFC 6749 §4.4). A session is
    /// still required unless `session=optional` is given.
    case client(ClientCredentialsGrant, sessionRequired: Bool)

    /// The options as written after the upstream URL, without the default (`auth=user`): `""`,
    /// `;auth=none`, `;auth=client;scope=reports.read;session=optional`.
    public var description: String {
        switch self {
        case .user: ""
        case .optional: ";auth=optional"
        case .none: ";auth=none"
        case .client(let grant, let sessionRequired):
            ";auth=client" + (grant.scope.map { ";scope=\($0)" } ?? "") + (grant.audience.map { ";audience=\($0)" } ?? "")
                + (sessionRequired ? "" : ";session=optional")
        }
    }

    /// The client-credentials grant this route needs, if any.
    public var clientGrant: ClientCredentialsGrant? {
        if case .client(let grant, _) = self { return grant }
        return nil
    }

    /// Whether a request must carry the anti-forgery header (SPEC: `auth=user` and a session-bound
    /// `auth=client` always; `auth=optional` and `session=optional` whenever a session cookie is
    /// present, since only then is there ambient authority to forge; `auth=none` never). The
    /// cookie is looked for only when the answer depends on it.
    public func requiresAntiForgery(sessionCookiePresent: @autoclosure () -> Bool) -> Bool {
        switch self {
        case .user: true
        case .none: false
        case .optional: sessionCookiePresent()
        case .client(_, let sessionRequired): sessionRequired || sessionCookiePresent()
        }
    }
}

/// The parameters of one client-credentials grant (RFC 6749 §4.4.2): routes with the same
/// `scope=` and `audience=` share one cached token.
public struct ClientCredentialsGrant: Sendable, Hashable {
    /// Space-separated scope tokens, or nil for the provider's default.
    public var scope: String?
    /// The `audience` parameter some providers (Auth0, Okta) need to pick the API; nil when not sent.
    public var audience: String?

    public init(scope: String? = nil, audience: String? = nil) {
        self.scope = scope
        self.audience = audience
    }
}

/// The route options after the upstream URL: `;`-separated `name=value` pairs.
///
/// Pure parsing: every refusal names the option so that startup (exit 64) and `gatehouse check`
/// can tell the operator what to fix.
public enum RouteOptions {
    /// The names this version understands.
    public static let known = ["auth", "scope", "audience", "session", "max_in_flight", "providers", "identity", "token",
                               "exchange", "resource", "acr", "max_age", "dpop", "allow"]

    /// What the options of one route say.
    public struct Parsed: Sendable, Equatable {
        public var auth: RouteAuth = .user
        /// `max_in_flight=N`: this route's bound of API calls in flight per event loop; nil for
        /// `GATEHOUSE_ROUTE_MAX_IN_FLIGHT`.
        public var maxInFlight: Int? = nil
        /// `providers=A|B`: the providers whose sessions may use the route; nil for every provider.
        public var providers: [String]? = nil
        /// `identity=`, `token=`, `exchange=` and, on `auth=user`/`optional`, `audience=`, `resource=`, `scope=`.
        public var identity: RouteIdentity = .plain
        /// `acr=A|B` and `max_age=SECONDS`: nil when neither is given.
        public var stepUp: StepUpPolicy? = nil
        /// `allow=RULE`: whose sessions may call the route; nil for every signed-in user.
        public var allow: AccessRule? = nil
    }

    /// Why an option list was refused.
    public enum ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        case empty
        case unknownOption(String)
        case invalidValue(option: String, value: String, reason: String)
        case duplicate(String)
        case notApplicable(option: String, auth: String)
        /// An option given where it means nothing or contradicts another; `reason` says why.
        case conflict(option: String, reason: String)

        public var description: String {
            switch self {
            case .empty: "has an empty route option (two ;; in a row or a trailing ;)"
            case .unknownOption(let name): "has an unknown route option \(ConfigurationIssue.quote(name)) (known: \(known.joined(separator: ", ")))"
            case .invalidValue(let option, let value, let reason): "has route option \(option)=\(ConfigurationIssue.quote(value)), \(reason)"
            case .duplicate(let name): "gives route option \(name) more than once"
            case .notApplicable(let option, let auth): "has route option \(option)=, which applies only to auth=client (this route is auth=\(auth))"
            case .conflict(let option, let reason): "has route option \(option)=, \(reason)"
            }
        }
    }

    /// Parses `auth=client;scope=a b` (the text after the first `;`, so empty text is an empty option).
    public static func parse(_ text: Substring) throws(ParseError) -> Parsed {
        var given = Given()
        var seen = Set<String>()
        for rawOption in text.split(separator: ";", omittingEmptySubsequences: false) {
            let option = rawOption.trimmingConfigurationWhitespace()
            guard !option.isEmpty else { throw .empty }
            let name: String, value: String
            if let eq = option.firstIndex(of: "=") {
                name = String(option[..<eq].trimmingConfigurationWhitespace())
                value = String(option[option.index(after: eq)...].trimmingConfigurationWhitespace())
            } else {
                name = String(option)
                value = ""
            }
            guard known.contains(name) else { throw .unknownOption(name) }
            // `allow=` alone repeats (alternatives); any other option given twice is ambiguous.
            guard name == "allow" || seen.insert(name).inserted else { throw .duplicate(name) }
            guard !value.isEmpty else { throw .invalidValue(option: name, value: value, reason: "which needs a value") }
            if try given.takeIdentityOption(name, value) { continue }
            if try given.takeSessionOption(name, value) { continue }
            _ = try given.takeAccessOption(name, value)
        }
        return try given.parsed()
    }

    /// The options of one route as written, each once, before they are checked against each other.
    private struct Given {
        var maxInFlight: Int?
        var auth: String?
        var scope: String?
        var audience: String?
        var session: String?
        var providers: [String]?
        var identity: String?, token: String?, exchange: String?, resource: String?
        var acr: [String]?, maxAge: Int?, dpop: String?, allow: AccessRule?

        /// `identity=`, `token=`, `exchange=`, `resource=`, `dpop=`; false for another option. Each
        /// option reaches these once (`parse` refused a repeated one).
        mutating func takeIdentityOption(_ name: String, _ value: String) throws(ParseError) -> Bool {
            switch name {
            case "identity": identity = try Self.choice(name, value, ["assertion", "headers", "both", "none"])
            case "token": token = try Self.choice(name, value, ["access", "assertion", "none"])
            case "exchange": exchange = try Self.choice(name, value, ["token", "refresh"])
            case "dpop": dpop = try Self.choice(name, value, ["on", "off"])
            case "resource":
                guard RouteIdentity.isValidResource(value) else {
                    throw .invalidValue(option: name, value: value,
                                        reason: "which is not an absolute URI without a fragment (RFC 8707), e.g. https://api.example.com")
                }
                resource = value
            default: return false
            }
            return true
        }

        /// `allow=` (repeated: alternatives), `acr=`, `max_age=`; false for another option.
        mutating func takeSessionOption(_ name: String, _ value: String) throws(ParseError) -> Bool {
            switch name {
            case "allow":
                do {
                    let rule = try AccessRule.parse(value)
                    allow = allow.map { $0.or(rule) } ?? rule
                } catch {
                    throw .invalidValue(option: name, value: value, reason: "which \(error)")
                }
            case "acr":
                let values = value.split(separator: "|", omittingEmptySubsequences: false)
                guard values.allSatisfy(StepUpPolicy.isValidACR) else {
                    throw .invalidValue(option: name, value: value,
                                        reason: "which is not a |-separated list of acr values (visible ASCII, no spaces)")
                }
                acr = values.map(String.init)
            case "max_age":
                guard let seconds = Int(value), seconds >= 0, seconds <= StepUpPolicy.maximumMaxAge else {
                    throw .invalidValue(option: name, value: value, reason: "which is not a whole number of seconds from 0 to 315360000")
                }
                maxAge = seconds
            default: return false
            }
            return true
        }

        /// `auth=`, `scope=`, `audience=`, `max_in_flight=`, `providers=`, `session=`.
        mutating func takeAccessOption(_ name: String, _ value: String) throws(ParseError) -> Bool {
            switch name {
            case "auth": auth = try Self.choice(name, value, ["user", "optional", "none", "client"])
            case "session": session = try Self.choice(name, value, ["required", "optional"])
            case "scope": scope = try scopeValue(value)
            case "audience":
                guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw .invalidValue(option: name, value: value, reason: "which may only hold visible ASCII without spaces")
                }
                audience = value
            case "max_in_flight":
                guard let number = Int(value), number >= 1, number <= 1_000_000 else {
                    throw .invalidValue(option: name, value: value, reason: "which is not a whole number from 1 to 1000000")
                }
                maxInFlight = number
            case "providers":
                var names: [String] = []
                for entry in value.split(separator: "|", omittingEmptySubsequences: false) {
                    let name = String(entry.trimmingConfigurationWhitespace())
                    guard ProviderSettings.isValidName(name) else {
                        throw .invalidValue(option: "providers", value: value,
                                            reason: "which is not a |-separated list of provider names (a-z, 0-9, -)")
                    }
                    if !names.contains(name) { names.append(name) }
                }
                providers = names
            default: return false
            }
            return true
        }

        /// `value` when it is one of `allowed`.
        private static func choice(_ name: String, _ value: String, _ allowed: [String]) throws(ParseError) -> String {
            guard allowed.contains(value) else {
                throw .invalidValue(option: name, value: value, reason: "which is not one of \(allowed.joined(separator: ", "))")
            }
            return value
        }

        /// The route's policy: the options checked against each other and the route's `auth=`.
        func parsed() throws(ParseError) -> Parsed {
            let chosen = auth ?? "user"
            if chosen == "none", providers != nil {
                throw .invalidValue(option: "providers", value: providers?.joined(separator: "|") ?? "",
                                    reason: "which needs a session, but this route is auth=none")
            }
            var routeIdentity = try identityOptions(auth: chosen, identity: identity, token: token, exchange: exchange,
                                                    audience: audience, resource: resource, scope: scope, session: session)
            let routeAuth: RouteAuth
            switch chosen {
            case "optional": routeAuth = .optional
            case "none": routeAuth = .none
            case "client":
                routeAuth = .client(ClientCredentialsGrant(scope: scope, audience: audience), sessionRequired: session != "optional")
            default: routeAuth = .user
            }
            if dpop == "off" {
                guard chosen == "user" || chosen == "optional" else {
                    throw .conflict(option: "dpop", reason: "which concerns the user's tokens (auth=user or auth=optional; this route is auth=\(chosen))")
                }
                routeIdentity.refusesDPoP = true
            }
            var stepUp: StepUpPolicy?
            if acr != nil || maxAge != nil {
                guard chosen == "user" || chosen == "optional" else {
                    throw .conflict(option: acr != nil ? "acr" : "max_age",
                                    reason: "which needs the user's session (auth=user or auth=optional; this route is auth=\(chosen))")
                }
                stepUp = StepUpPolicy(acrValues: acr ?? [], maxAge: maxAge)
            }
            if allow != nil, chosen == "none" || (chosen == "client" && session == "optional") {
                // A rule over the session, where a caller without one is let through anyway.
                throw .conflict(option: "allow", reason: "which needs a session, but this route "
                                + (chosen == "none" ? "is auth=none" : "lets callers without one through (session=optional)"))
            }
            return Parsed(auth: routeAuth, maxInFlight: maxInFlight, providers: providers, identity: routeIdentity, stepUp: stepUp,
                          allow: allow)
        }
    }

    /// The identity options against the route's `auth=`: each means something on it, and none
    /// contradicts another (SPEC "Identity for your own APIs").
    private static func identityOptions(auth: String, identity: String?, token: String?, exchange: String?,
                                        audience: String?, resource: String?, scope: String?,
                                        session: String?) throws(ParseError) -> RouteIdentity {
        if auth == "none" {
            for (option, given) in [("identity", identity), ("token", token), ("exchange", exchange)] where given != nil {
                throw .conflict(option: option, reason: "which needs a session, but this route is auth=none")
            }
        }
        if auth == "client" {
            for (option, given) in [("token", token), ("exchange", exchange), ("resource", resource)] where given != nil {
                throw .conflict(option: option, reason: "which does not apply to auth=client (the gateway's own token is the bearer)")
            }
            // `scope=`/`audience=` are the client-credentials grant's.
            return RouteIdentity(carrier: identity.flatMap(RouteIdentity.Carrier.init(rawValue:)) ?? .none)
        }
        if session != nil { throw .notApplicable(option: "session", auth: auth) }
        let carrier = identity.flatMap(RouteIdentity.Carrier.init(rawValue:)) ?? .none
        let bearer = token.flatMap(RouteIdentity.Bearer.init(rawValue:))
        let kind = exchange.flatMap(RouteIdentity.ExchangeKind.init(rawValue:))
        if let kind {
            guard auth == "user" else {
                throw .conflict(option: "exchange", reason: "which needs auth=user (this route is auth=\(auth))")
            }
            if let bearer, bearer != .access {
                throw .conflict(option: "exchange", reason: "which sends the exchanged token, but token=\(bearer.rawValue) sends none")
            }
            switch kind {
            case .token where audience == nil && resource == nil && scope == nil:
                throw .conflict(option: "exchange", reason: "which needs audience=, resource= or scope= to name the API")
            case .refresh where audience != nil:
                throw .conflict(option: "audience", reason: "which exchange=refresh cannot send (use resource= or scope=)")
            case .refresh where resource == nil && scope == nil:
                throw .conflict(option: "exchange", reason: "which needs resource= or scope= to name the API")
            default: break
            }
        } else {
            if resource != nil { throw .conflict(option: "resource", reason: "which applies only with exchange=token or exchange=refresh") }
            if scope != nil { throw .notApplicable(option: "scope", auth: auth) }
            let signs = carrier == .assertion || carrier == .both || bearer == .assertion
            if audience != nil, !signs {
                throw .conflict(option: "audience", reason: "which names the API for exchange= or the assertion (identity=assertion|both, token=assertion)")
            }
        }
        return RouteIdentity(carrier: carrier, bearer: bearer, audience: audience, resource: resource, scope: scope,
                             exchange: kind)
    }

    /// RFC 6749 §3.3: space-separated scope-tokens of `%x21 / %x23-5B / %x5D-7E`, normalized to
    /// single spaces (the cache key, and what the provider receives).
    static func scopeValue(_ value: String) throws(ParseError) -> String {
        var tokens: [Substring] = []
        for token in value.split(separator: " ") {
            guard OAuthScope.isValidToken(token) else {
                throw .invalidValue(option: "scope", value: value, reason: "which holds characters not allowed in a scope (RFC 6749 §3.3)")
            }
            tokens.append(token)
        }
        return tokens.joined(separator: " ")
    }
}
