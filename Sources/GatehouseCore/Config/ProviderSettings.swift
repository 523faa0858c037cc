/// One OpenID provider as configured: `GATEHOUSE_*` for the single provider `default`, or
/// `GATEHOUSE_IDP_<NAME>_*` (falling back to the unprefixed variables) for each name of
/// `GATEHOUSE_PROVIDERS`. `description` never shows the client secret or the private key.
public struct ProviderSettings: Sendable, CustomStringConvertible {
    /// The name sessions, paths and metrics carry: `default` without `GATEHOUSE_PROVIDERS`.
    public var name: String
    /// What the chooser page and `/providers` show (`DISPLAY_NAME`, else the profile's name, else `name`).
    public var displayName: String
    /// The OpenID provider issuer exactly as configured (it must equal the `iss` of its tokens).
    public var issuer: String
    public var clientID: String
    public var clientSecret: String?
    public var clientAuthMethod: ClientAuthMethod
    /// Requested scopes: configured order kept, duplicates dropped, `openid` added first when missing.
    public var scopes: [String]
    /// Extra authorization-request parameters, decoded, in configured order.
    public var authParams: [(String, String)]
    /// When UserInfo is fetched after login and refresh (`USERINFO`).
    public var userinfo: UserInfoPolicy = .auto
    /// `ID_TOKEN_ALGS`: the only algorithms accepted for ID and logout tokens; nil for the default.
    public var idTokenAlgorithms: [String]? = nil
    /// The PEM of the client's private key for `private_key_jwt`; never printed.
    public var clientPrivateKeyPEM: String? = nil
    /// `CLIENT_KEY_ID`: the `kid` of that key at the provider.
    public var clientKeyID: String? = nil
    /// `CLIENT_KEY_ALG`: what that key signs client assertions with.
    public var clientKeyAlgorithm: ClientKeyAlgorithm = .auto
    /// `PROFILE` (`GATEHOUSE_PROVIDER` for the single provider): the preset the values default from.
    public var profile: ProviderProfile = .named(.generic)
    /// Endpoint overrides by unprefixed variable (`GATEHOUSE_TOKEN_ENDPOINT` → URL), winning over
    /// discovery; includes the profile's default token endpoint.
    public var endpointOverrides: [String: String] = [:]
    /// `DISCOVERY_URL`: where the discovery document is, when not at the issuer's well-known path
    /// (Facebook documents it with a trailing slash); nil for `{issuer}/.well-known/openid-configuration`.
    public var discoveryURLOverride: String? = nil
    /// `TOKEN_REQUEST`.
    public var tokenRequest: TokenRequestMethod = .post
    /// `LOGIN_PARAMS`: `/login` query parameters passed on to the authorization request.
    public var loginParams: [String] = []
    /// `REQUIRE_CLAIMS`: `(name, value)` pairs the ID token must carry.
    public var requiredClaims: [(String, String)] = []
    /// `LOGOUT_URL` (or the profile's): the logout template used without an `end_session_endpoint`.
    public var logoutURL: String? = nil
    /// `LONG_LIVED_TOKEN`: after the code exchange, trade Facebook's short-lived user token for a
    /// long-lived one (`grant_type=fb_exchange_token`).
    public var longLivedToken = false
    /// `PAR`: whether the authorization request is pushed to the provider first (RFC 9126).
    public var pushedAuthorization: PushedAuthorizationMode = .auto
    /// `DPOP`: sender-constrained tokens (RFC 9449).
    public var dpop: DPoPMode = .off
    /// `REQUEST_OBJECT`: the authorization request as a signed JWT (RFC 9101), by value or by reference.
    public var requestObject: RequestObjectMode = .off
    /// `REQUEST_OBJECT_ENCRYPTION`: that JWT also encrypted to the provider.
    public var requestObjectEncryption: RequestObjectEncryptionMode = .off
    /// `CLAIMS_REQUEST`: the `claims` parameter (OIDC Core §5.5), JSON as configured (checked where
    /// JSON is read, `ProviderConnection.clientCredentialProblem`).
    public var claimsRequest: String? = nil
    /// `API_URL` (`GATEHOUSE_PROVIDER=github`): the REST API the user's identity is read from.
    public var apiURL: String? = nil
    /// `APPLE_TEAM_ID` and `APPLE_KEY_ID` (`GATEHOUSE_PROVIDER=apple`): the client secret's `iss`
    /// and the `.p8` key's id; the key is `clientPrivateKeyPEM`.
    public var appleTeamID: String? = nil
    public var appleKeyID: String? = nil
    /// `GATEHOUSE_RESPONSE_MODE`: `query` or `form_post`.
    public var responseMode: ResponseMode = .query
    /// `GROUPS_CLAIM`: where this provider puts the user's groups (a claim name, else a dotted path).
    public var groupsClaim = "groups"
    /// `ALLOWED_EMAIL_DOMAINS`, `ALLOWED_EMAILS`, `ALLOWED_GROUPS`: who may sign in here at all.
    public var loginGate = LoginGate()

    public init(name: String, displayName: String, issuer: String, clientID: String, clientSecret: String?,
                clientAuthMethod: ClientAuthMethod, scopes: [String], authParams: [(String, String)]) {
        self.name = name
        self.displayName = displayName
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.clientAuthMethod = clientAuthMethod
        self.scopes = scopes
        self.authParams = authParams
    }

    /// The name of the only provider when `GATEHOUSE_PROVIDERS` is unset.
    public static let defaultName = "default"

    /// Where discovery fetches the document: the override, else `{issuer}/.well-known/openid-configuration`
    /// with a terminating `/` of the issuer removed first (OpenID Connect Discovery 1.0 §4), and
    /// the `/` Facebook's documented URL ends with for its profile.
    public var discoveryURL: String {
        if let discoveryURLOverride { return discoveryURLOverride }
        var base = issuer
        while base.hasSuffix("/") { base.removeLast() }
        return base + "/.well-known/openid-configuration" + (profile.discoveryPathEndsWithSlash ? "/" : "")
    }

    public var description: String {
        "\(name): issuer=\(issuer) clientID=\(clientID) clientSecret=\(clientSecret == nil ? "unset" : "set") "
            + "clientAuthMethod=\(clientAuthMethod.rawValue) scopes=\(scopes.joined(separator: " "))"
    }

    /// `GATEHOUSE_PROVIDERS` names: 1–32 characters of `[a-z0-9-]`.
    public static func isValidName(_ name: some StringProtocol) -> Bool {
        (1...32).contains(name.utf8.count)
            && name.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 }
    }

    /// The prefix of a provider's own variables: `GATEHOUSE_IDP_<NAME>_`, upper-cased, `-` as `_`.
    public static func variablePrefix(for name: String) -> String {
        "GATEHOUSE_IDP_" + name.uppercased().replacing("-", with: "_") + "_"
    }
}

extension ProviderSettings {
    /// `text` (an error or a hint naming `GATEHOUSE_*` variables) with each provider variable
    /// spelt as this provider's own (`GATEHOUSE_ISSUER` → `GATEHOUSE_IDP_CORP_ISSUER`): with several
    /// providers the unprefixed names are not the ones to set. Unchanged for the one `default` provider.
    public func ownVariableNames(in text: String) -> String {
        guard name != Self.defaultName, text.contains("GATEHOUSE_") else { return text }
        var reader = EnvironmentReader([:])
        reader.providerScope = name
        var out = ""
        var rest = Substring(text)
        while let start = rest.firstRange(of: "GATEHOUSE_") {
            out += rest[..<start.lowerBound]
            var end = start.upperBound
            while end < rest.endIndex, let scalar = rest[end].unicodeScalars.first, rest[end].unicodeScalars.count == 1,
                  (scalar.value >= 65 && scalar.value <= 90) || scalar == "_" || (scalar.value >= 48 && scalar.value <= 57) {
                end = rest.index(after: end)
            }
            let variable = String(rest[start.lowerBound..<end])
            out += reader.scopedName(variable) ?? variable
            rest = rest[end...]
        }
        return out + rest
    }
}

extension ProviderSettings {
    /// Whether `other` describes this provider with every setting the same (secrets included): a
    /// reload keeps such a provider's connection (its discovery, keys and back-off).
    public func isSameProvider(as other: ProviderSettings) -> Bool {
        Self.fingerprint(self) == Self.fingerprint(other)
    }

    private static func fingerprint(_ settings: ProviderSettings) -> [String] {
        Mirror(reflecting: settings).children.map { "\($0.label ?? "")=\(String(reflecting: $0.value))" }
    }
}
