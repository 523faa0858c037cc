import FoundationEssentials

/// When Gatehouse calls the provider's UserInfo endpoint (`GATEHOUSE_USERINFO`, OIDC Core §5.3).
public enum UserInfoPolicy: String, Sendable, Equatable, CaseIterable {
    /// When the provider has a `userinfo_endpoint` and the scopes ask for more than `openid`.
    case auto
    /// Always (login fails when the provider has no `userinfo_endpoint`).
    case always = "true"
    /// Never.
    case never = "false"

    /// Whether UserInfo is fetched, given the provider's endpoint and the requested scopes.
    public func applies(endpoint: String?, scopes: [String]) -> Bool {
        switch self {
        case .never: false
        case .always: true
        case .auto: endpoint != nil && scopes.contains { $0 != "openid" }
        }
    }
}

/// The OIDC-specific variables: read by ``GatehouseConfiguration/load(environment:requireSecretKey:)``.
extension EnvironmentReader {
    /// The asymmetric JWS algorithms (RFC 7518 §3.3–3.5, RFC 8037); the same set as
    /// `GatehouseOIDC.SigningAlgorithm`. `none` and HMAC are never acceptable for provider tokens.
    static let asymmetricAlgorithms = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                                       "ES256", "ES384", "ES512", "EdDSA"]

    /// Authorization-request parameters Gatehouse does not support: `response_mode` would move the
    /// code out of the query `/callback` reads; `request` and `request_uri` (request objects,
    /// OIDC Core §6) would carry parameters Gatehouse neither signs nor checks.
    static let unsupportedAuthParams: Set<String> = ["response_mode", "request", "request_uri"]

    mutating func userinfoPolicy() -> UserInfoPolicy? {
        choice("GATEHOUSE_USERINFO", default: .auto, expected: "auto, true or false")
    }

    /// `GATEHOUSE_ID_TOKEN_ALGS`: nil when unset (the default depends on the provider's metadata).
    mutating func idTokenAlgorithms() -> [String]? {
        let name = "GATEHOUSE_ID_TOKEN_ALGS"
        guard let text = value(name) else { return nil }
        var algorithms: [String] = []
        for raw in text.split(separator: ",") {
            let entry = String(raw.trimmingConfigurationWhitespace())
            if entry.isEmpty { continue }
            guard let known = Self.asymmetricAlgorithms.first(where: { $0.lowercased() == entry.lowercased() }) else {
                let lower = entry.lowercased()
                let why = lower == "none" || lower.hasPrefix("hs")
                    ? "is not allowed: ID and logout tokens must be signed asymmetrically (no none, no HMAC)"
                    : "is not a supported algorithm (\(Self.asymmetricAlgorithms.joined(separator: ", ")))"
                fail(name, "\(ConfigurationIssue.quote(entry)) \(why)")
                continue
            }
            if !algorithms.contains(known) { algorithms.append(known) }
        }
        if algorithms.isEmpty && issues.allSatisfy({ $0.variable != name }) {
            fail(name, "lists no algorithm")
        }
        return algorithms
    }

    /// `GATEHOUSE_CLIENT_PRIVATE_KEY` (PEM text, or a file holding it) and `GATEHOUSE_CLIENT_KEY_ID`:
    /// required with `private_key_jwt`. The key is parsed when the token client is built; here
    /// only its presence and PEM shape are checked, and the value is never echoed.
    /// `CLIENT_ENCRYPTION_KEY` and `…_PREVIOUS`: PEM text or the path of a PEM file each (what
    /// they hold is checked where keys are read, `ProviderConnection.clientCredentialProblem`).
    mutating func clientEncryptionKeys() -> [String] {
        var keys: [String] = []
        for name in ["GATEHOUSE_CLIENT_ENCRYPTION_KEY", "GATEHOUSE_CLIENT_ENCRYPTION_KEY_PREVIOUS"] {
            guard let text = value(name) else { continue }
            if name.hasSuffix("PREVIOUS"), keys.isEmpty {
                fail(name, "is set without GATEHOUSE_CLIENT_ENCRYPTION_KEY (the previous key serves beside a current one)")
                continue
            }
            var pem = text
            if !text.hasPrefix("-----BEGIN") {
                guard let data = FileManager.default.contents(atPath: text) else {
                    fail(name, "is neither a PEM private key nor a readable file")
                    continue
                }
                pem = String(decoding: data, as: UTF8.self)
            }
            guard pem.contains("-----BEGIN") && pem.contains("PRIVATE KEY-----") else {
                fail(name, "does not hold a PEM private key (-----BEGIN ... PRIVATE KEY-----)")
                continue
            }
            keys.append(pem)
        }
        return keys
    }

    /// `CLIENT_PRIVATE_KEY` (PEM text or a file) and `CLIENT_KEY_ID`; required with
    /// `private_key_jwt`, or with what `requiredFor` names (the Apple profile's `.p8` key).
    mutating func clientPrivateKey(method: ClientAuthMethod?, requiredFor: String? = nil) -> (pem: String, keyID: String?)? {
        let name = "GATEHOUSE_CLIENT_PRIVATE_KEY"
        let keyID = value("GATEHOUSE_CLIENT_KEY_ID")
        guard let text = value(name) else {
            if method == .privateKeyJWT { fail(name, "is required with GATEHOUSE_CLIENT_AUTH_METHOD=private_key_jwt") }
            if let requiredFor { fail(name, "is required with \(requiredFor): the .p8 key the client secret is signed with") }
            return nil
        }
        var pem = text
        if !text.hasPrefix("-----BEGIN") {
            guard let data = FileManager.default.contents(atPath: text) else {
                fail(name, "is neither a PEM private key nor a readable file")
                return nil
            }
            pem = String(decoding: data, as: UTF8.self)
        }
        guard pem.contains("-----BEGIN") && pem.contains("PRIVATE KEY-----") else {
            fail(name, "does not hold a PEM private key (-----BEGIN ... PRIVATE KEY-----)")
            return nil
        }
        return (pem, keyID)
    }

    /// `APPLE_TEAM_ID` and `APPLE_KEY_ID`: both required by the Apple profile (which signs its
    /// client secret and so takes no `CLIENT_SECRET`, and only `client_secret_post`), refused
    /// with any other profile.
    mutating func appleClientSecret(profile: ProviderProfile, clientSecret: String?) -> (teamID: String, keyID: String)? {
        let names = ["GATEHOUSE_APPLE_TEAM_ID", "GATEHOUSE_APPLE_KEY_ID"]
        guard profile.signsClientSecret else {
            for name in names where value(name) != nil { fail(name, "is used only with GATEHOUSE_PROVIDER=apple") }
            return nil
        }
        if clientSecret != nil {
            fail("GATEHOUSE_CLIENT_SECRET", "is not used with GATEHOUSE_PROVIDER=apple: the client secret is signed from GATEHOUSE_CLIENT_PRIVATE_KEY")
        }
        if let method = value("GATEHOUSE_CLIENT_AUTH_METHOD"), method != ClientAuthMethod.clientSecretPost.rawValue {
            fail("GATEHOUSE_CLIENT_AUTH_METHOD", "is \(ConfigurationIssue.quote(method)), but Apple takes client_secret_post only")
        }
        var found: [String] = []
        for name in names {
            guard let text = value(name) else {
                fail(name, "is required with GATEHOUSE_PROVIDER=apple (Apple Developer: \(name.hasSuffix("TEAM_ID") ? "the team id, 10 characters" : "the Sign in with Apple key's id"))")
                continue
            }
            guard text.count == 10, text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                fail(name, "\(ConfigurationIssue.quote(text)) is not 10 letters and digits (Apple's form of it)")
                continue
            }
            found.append(text)
        }
        return found.count == 2 ? (found[0], found[1]) : nil
    }

    /// `API_URL`: the profile's user API (GitHub's, or an Enterprise Server's `https://HOST/api/v3`),
    /// an https URL (http on loopback); refused for OpenID Connect providers.
    mutating func apiURL(profile: ProviderProfile) -> String? {
        let name = "GATEHOUSE_API_URL"
        guard let fallback = profile.defaultAPIURL else {
            if value(name) != nil { fail(name, "is used only with GATEHOUSE_PROVIDER=github (the user API it reads the identity from)") }
            return nil
        }
        var text = value(name) ?? fallback
        if let problem = providerURLProblem(text) {
            fail(name, "\(ConfigurationIssue.quote(text)) \(problem)")
            return nil
        }
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// `REQUEST_OBJECT`: `on` or `reference` needs the client key that signs the objects, and
    /// OpenID Connect.
    mutating func requestObject(profile: ProviderProfile) -> RequestObjectMode? {
        let name = "GATEHOUSE_REQUEST_OBJECT"
        guard let mode = choice(name, default: RequestObjectMode.off, expected: "on, reference or off") else { return nil }
        guard mode.signs else { return mode }
        if value("GATEHOUSE_CLIENT_PRIVATE_KEY") == nil {
            fail(name, "is \(mode.rawValue) but GATEHOUSE_CLIENT_PRIVATE_KEY is not set: request objects are signed with the client key")
        }
        if !profile.openIDConnect || profile.signsClientSecret {
            fail(name, "is not supported by GATEHOUSE_PROVIDER=\(profile.name.rawValue)")
        }
        return mode
    }

    /// `REQUEST_OBJECT_ENCRYPTION`: only an object there is can be encrypted.
    mutating func requestObjectEncryption(requestObject: RequestObjectMode?) -> RequestObjectEncryptionMode? {
        let name = "GATEHOUSE_REQUEST_OBJECT_ENCRYPTION"
        guard let mode = choice(name, default: RequestObjectEncryptionMode.off, expected: "on or off") else { return nil }
        if mode == .on, requestObject == .off {
            fail(name, "is on but GATEHOUSE_REQUEST_OBJECT is off: there is no request object to encrypt")
        }
        return mode
    }

    /// Refuses the authorization parameters Gatehouse would otherwise have to drop silently.
    mutating func refuseUnsupportedAuthParams(_ params: [(String, String)]) -> [(String, String)] {
        params.filter { key, _ in
            guard Self.unsupportedAuthParams.contains(key) else { return true }
            fail("GATEHOUSE_AUTH_PARAMS", "\(ConfigurationIssue.quote(key)) cannot be set here (the response mode is GATEHOUSE_RESPONSE_MODE, query or form_post; request objects are GATEHOUSE_REQUEST_OBJECT)")
            return false
        }
    }
}
