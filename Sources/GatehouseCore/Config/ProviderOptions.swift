import FoundationEssentials
import GatehouseEncoding

/// The provider-profile variables (`GATEHOUSE_PROVIDER` and the quirks it presets), read by
/// ``GatehouseConfiguration/load(environment:requireSecretKey:)``.
extension EnvironmentReader {
    /// The endpoint override variables, in the order of the discovery fields they replace.
    static let endpointVariables = ["GATEHOUSE_AUTHORIZATION_ENDPOINT", "GATEHOUSE_TOKEN_ENDPOINT", "GATEHOUSE_JWKS_URI",
                                    "GATEHOUSE_USERINFO_ENDPOINT", "GATEHOUSE_END_SESSION_ENDPOINT",
                                    "GATEHOUSE_REVOCATION_ENDPOINT"]

    /// Names `/login` can never pass on: those Gatehouse sets itself or that would change the flow,
    /// token-endpoint parameters, and `/login`'s own `returnTo`.
    static let reservedLoginParams: Set<String> = reservedAuthParams.union(unsupportedAuthParams).union(
        ["code", "code_verifier", "client_secret", "client_assertion", "client_assertion_type", "grant_type",
         "returnTo"])

    mutating func providerProfile() -> ProviderProfile {
        let name = "GATEHOUSE_PROVIDER"
        guard let text = value(name) else { return .named(.generic) }
        guard let profile = ProviderProfile.Name(rawValue: text.lowercased()) else {
            let names = ProviderProfile.Name.allCases.map(\.rawValue).joined(separator: ", ")
            fail(name, "\(ConfigurationIssue.quote(text)) is not one of \(names)")
            return .named(.generic)
        }
        return .named(profile)
    }

    /// The profile's default method when a secret is set and no method is configured.
    func profileAuthMethod(_ method: ClientAuthMethod?, profile: ProviderProfile, hasSecret: Bool) -> ClientAuthMethod? {
        guard value("GATEHOUSE_CLIENT_AUTH_METHOD") == nil, hasSecret else { return method }
        return profile.clientAuthMethodWithSecret
    }

    /// Set overrides by variable; the token endpoint falls back to the profile's.
    mutating func endpointOverrides(profile: ProviderProfile) -> [String: String] {
        var overrides: [String: String] = [:]
        for name in Self.endpointVariables {
            var text = value(name)
            if text == nil, name == "GATEHOUSE_TOKEN_ENDPOINT" { text = profile.tokenEndpoint }
            guard let text else { continue }
            if let problem = providerURLProblem(text) {
                fail(name, "\(ConfigurationIssue.quote(text)) \(problem)")
                continue
            }
            overrides[name] = text
        }
        return overrides
    }

    /// An https URL (http on loopback), without user information or fragment.
    func providerURLProblem(_ text: String) -> String? {
        let url: AbsoluteURL
        do { url = try AbsoluteURL(parsing: text) } catch { return error.description }
        if !url.isHTTPS && !url.isLoopbackHost {
            return "must use https (plain http is allowed only for localhost, 127.0.0.0/8 and [::1])"
        }
        if url.hasUserInfo { return "must not contain user information (user@)" }
        if url.fragment != nil { return "must not have a fragment" }
        return nil
    }

    /// `GATEHOUSE_TOKEN_REQUEST`. A `get` must not put a client credential in the URL (proxies and
    /// provider access logs keep URLs) unless the profile's provider requires exactly that.
    mutating func tokenRequest(profile: ProviderProfile, method: ClientAuthMethod?) -> TokenRequestMethod? {
        let name = "GATEHOUSE_TOKEN_REQUEST"
        var request = profile.tokenRequest
        if let text = value(name) {
            guard let parsed = TokenRequestMethod(rawValue: text.lowercased()) else {
                fail(name, "\(ConfigurationIssue.quote(text)) is not post or get")
                return nil
            }
            request = parsed
        }
        if request == .get, let method, method != .clientSecretBasic, method != .none, !profile.secretInTokenQuery {
            fail(name, "get would put the client credential of \(method.rawValue) in the URL; use client_secret_basic or none (only GATEHOUSE_PROVIDER=facebook sends client_secret in the query, as Facebook requires)")
            return nil
        }
        return request
    }

    /// The non-empty, trimmed entries of a comma-separated variable.
    func listEntries(_ name: String) -> [String] {
        (value(name) ?? "").split(separator: ",").map { String($0.trimmingConfigurationWhitespace()) }.filter { !$0.isEmpty }
    }

    /// `GATEHOUSE_LOGIN_PARAMS`: comma-separated parameter names.
    mutating func loginParams() -> [String] {
        let name = "GATEHOUSE_LOGIN_PARAMS"
        var names: [String] = []
        for entry in listEntries(name) {
            guard HTTPToken.isValid(entry) else {
                fail(name, "\(ConfigurationIssue.quote(entry)) is not a parameter name")
                continue
            }
            guard !Self.reservedLoginParams.contains(entry) else {
                fail(name, "\(ConfigurationIssue.quote(entry)) is a reserved OAuth parameter that Gatehouse sets itself or never sends; it cannot come from /login")
                continue
            }
            if !names.contains(entry) { names.append(entry) }
        }
        return names
    }

    /// `GATEHOUSE_REQUIRE_CLAIMS`: comma-separated `name=value` pairs.
    mutating func requiredClaims() -> [(String, String)] {
        let name = "GATEHOUSE_REQUIRE_CLAIMS"
        var pairs: [(String, String)] = []
        for entry in listEntries(name) {
            guard let eq = entry.firstIndex(of: "="), eq != entry.startIndex, entry.index(after: eq) != entry.endIndex else {
                fail(name, "\(ConfigurationIssue.quote(entry)) is not name=value")
                continue
            }
            pairs.append((String(entry[..<eq]), String(entry[entry.index(after: eq)...])))
        }
        return pairs
    }

    /// `GATEHOUSE_LOGOUT_URL`, or the profile's default for this issuer. Only `{client_id}`,
    /// `{post_logout_redirect_uri}` and `{id_token_hint}` may appear in braces.
    mutating func logoutURL(profile: ProviderProfile, issuer: String?) -> String? {
        let name = "GATEHOUSE_LOGOUT_URL"
        guard let text = value(name) else { return issuer.flatMap(profile.defaultLogoutURL(issuer:)) }
        var filled = text
        for placeholder in ["{client_id}", "{post_logout_redirect_uri}", "{id_token_hint}"] {
            filled = filled.replacing(placeholder, with: "x")
        }
        if filled.contains("{") || filled.contains("}") {
            fail(name, "\(ConfigurationIssue.quote(text)) has an unknown placeholder (use {client_id}, {post_logout_redirect_uri}, {id_token_hint})")
            return nil
        }
        if let problem = providerURLProblem(filled) {
            fail(name, "\(ConfigurationIssue.quote(text)) \(problem)")
            return nil
        }
        return text
    }
}
