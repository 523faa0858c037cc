import FoundationEssentials

/// The OpenID provider's metadata (OpenID Connect Discovery 1.0 §3, RFC 8414 §2), validated.
///
/// For example: `let metadata = try await ProviderMetadata.discover(issuer: issuer, http: client)`.
public struct ProviderMetadata: Sendable, Equatable, Codable {
    public var issuer: String
    public var authorizationEndpoint: String
    public var tokenEndpoint: String
    public var jwksURI: String
    public var userinfoEndpoint: String?
    public var endSessionEndpoint: String?
    public var revocationEndpoint: String?
    public var codeChallengeMethodsSupported: [String]?
    public var idTokenSigningAlgValuesSupported: [String]?
    public var authorizationResponseIssParameterSupported: Bool?
    public var backchannelLogoutSupported: Bool?
    public var tokenEndpointAuthMethodsSupported: [String]?
    /// Discovery §3: the algorithms the token endpoint takes client assertions in.
    public var tokenEndpointAuthSigningAlgValuesSupported: [String]?
    /// RFC 9126 §5: where authorization requests are pushed, and whether the provider requires it.
    public var pushedAuthorizationRequestEndpoint: String?
    public var requirePushedAuthorizationRequests: Bool?
    /// RFC 9449 §5.1: the algorithms the provider takes DPoP proofs in.
    public var dpopSigningAlgValuesSupported: [String]?
    /// Whether the provider takes DPoP proofs signed ES256, the only kind Gatehouse signs
    /// (`GATEHOUSE_DPOP=on` stops `serve` and fails `check` without it).
    public var takesES256DPoPProofs: Bool { dpopSigningAlgValuesSupported?.contains("ES256") ?? false }
    /// Discovery §3: whether the provider fetches request objects by reference (absent: it does).
    public var requestURIParameterSupported: Bool?
    /// Discovery §3: the key managements and content encryptions it opens request objects with.
    public var requestObjectEncryptionAlgValuesSupported: [String]?
    public var requestObjectEncryptionEncValuesSupported: [String]?

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case jwksURI = "jwks_uri"
        case userinfoEndpoint = "userinfo_endpoint"
        case endSessionEndpoint = "end_session_endpoint"
        case revocationEndpoint = "revocation_endpoint"
        case codeChallengeMethodsSupported = "code_challenge_methods_supported"
        case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
        case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
        case backchannelLogoutSupported = "backchannel_logout_supported"
        case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
        case tokenEndpointAuthSigningAlgValuesSupported = "token_endpoint_auth_signing_alg_values_supported"
        case pushedAuthorizationRequestEndpoint = "pushed_authorization_request_endpoint"
        case requirePushedAuthorizationRequests = "require_pushed_authorization_requests"
        case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
        case requestURIParameterSupported = "request_uri_parameter_supported"
        case requestObjectEncryptionAlgValuesSupported = "request_object_encryption_alg_values_supported"
        case requestObjectEncryptionEncValuesSupported = "request_object_encryption_enc_values_supported"
    }

    public init(issuer: String, authorizationEndpoint: String, tokenEndpoint: String, jwksURI: String,
                userinfoEndpoint: String? = nil, endSessionEndpoint: String? = nil,
                revocationEndpoint: String? = nil, codeChallengeMethodsSupported: [String]? = nil,
                idTokenSigningAlgValuesSupported: [String]? = nil,
                authorizationResponseIssParameterSupported: Bool? = nil,
                backchannelLogoutSupported: Bool? = nil, tokenEndpointAuthMethodsSupported: [String]? = nil) {
        self.issuer = issuer
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.jwksURI = jwksURI
        self.userinfoEndpoint = userinfoEndpoint
        self.endSessionEndpoint = endSessionEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.codeChallengeMethodsSupported = codeChallengeMethodsSupported
        self.idTokenSigningAlgValuesSupported = idTokenSigningAlgValuesSupported
        self.authorizationResponseIssParameterSupported = authorizationResponseIssParameterSupported
        self.backchannelLogoutSupported = backchannelLogoutSupported
        self.tokenEndpointAuthMethodsSupported = tokenEndpointAuthMethodsSupported
    }

    /// `{issuer}/.well-known/openid-configuration` (Discovery §4: a trailing `/` of the issuer is
    /// removed before appending).
    public static func discoveryURL(issuer: String) -> String {
        var base = issuer
        while base.hasSuffix("/") { base.removeLast() }
        return base + "/.well-known/openid-configuration"
    }

    /// Decodes and validates a discovery document.
    ///
    /// - Parameters:
    ///   - data: the document's bytes.
    ///   - expectedIssuer: `GATEHOUSE_ISSUER`; the document's `issuer` must equal it exactly
    ///     (Discovery §4.3, a defence against mix-up attacks, RFC 9700 §4.4).
    ///   - overrides: endpoints the operator set; each replaces the document's value, and a required
    ///     endpoint the document lacks is an error naming the variable to set.
    ///   - issuerPolicy: the provider profile's issuer rule (exact unless Entra's template).
    /// - Throws: ``DiscoveryError`` naming the field and what is wrong.
    public static func decode(_ data: [UInt8], expectedIssuer: String, overrides: EndpointOverrides = EndpointOverrides(),
                              issuerPolicy: IssuerPolicy = .exact) throws(DiscoveryError) -> ProviderMetadata {
        let metadata: ProviderMetadata
        do {
            var document = Data(data)
            if overrides != EndpointOverrides(),
               case .object(let object) = try JSONDecoder().decode(JSONValue.self, from: document) {
                document = try JSONEncoder().encode(JSONValue.object(overrides.applied(to: object)))
            }
            metadata = try JSONDecoder().decode(ProviderMetadata.self, from: document)
        } catch let error as DecodingError {
            throw Self.discoveryError(for: error)
        } catch {
            throw .malformedDocument("\(error)")
        }
        try metadata.validate(expectedIssuer: expectedIssuer, issuerPolicy: issuerPolicy)
        return metadata
    }

    /// Fetches `{issuer}/.well-known/openid-configuration` (or `discoveryURL`) and validates it (see
    /// ``decode(_:expectedIssuer:)``). Up to two redirects to the same origin are followed (a
    /// trailing-slash redirect such as Facebook's); any other `3xx` fails like another status.
    public static func discover(issuer: String, http: any ProviderHTTPClient, overrides: EndpointOverrides = EndpointOverrides(),
                                issuerPolicy: IssuerPolicy = .exact, discoveryURL: String? = nil) async throws(DiscoveryError) -> ProviderMetadata {
        var url = discoveryURL ?? Self.discoveryURL(issuer: issuer)
        var response: ProviderHTTPResponse
        var redirects = 0
        while true {
            do {
                response = try await http.send(ProviderHTTPRequest(method: .get, url: url,
                                                                   headers: [ProviderHTTPHeader("Accept", "application/json")],
                                                                   operation: .discovery))
            } catch {
                throw .transport(error)
            }
            guard [301, 302, 307, 308].contains(response.status), redirects < 2,
                  let next = response.header("Location").flatMap({ sameOriginTarget($0, of: url) }) else { break }
            url = next
            redirects += 1
        }
        guard response.status == 200 else { throw .unexpectedStatus(response.status, url: url) }
        return try decode(response.body, expectedIssuer: issuer, overrides: overrides, issuerPolicy: issuerPolicy)
    }

    /// `location` resolved against `url` when it stays on `url`'s origin (an absolute path, or an
    /// absolute URL of the same scheme, host and port); nil otherwise.
    static func sameOriginTarget(_ location: String, of url: String) -> String? {
        let parts = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[0].hasSuffix(":"), parts[1].isEmpty, !parts[2].isEmpty else { return nil }
        let origin = parts[0] + "//" + parts[2]
        if location.hasPrefix("/"), !location.hasPrefix("//") { return origin + location }
        guard location.hasPrefix(origin + "/") else { return nil }
        return location
    }

    func validate(expectedIssuer: String, issuerPolicy: IssuerPolicy = .exact) throws(DiscoveryError) {
        guard issuerPolicy.acceptsDocumentIssuer(issuer, configured: expectedIssuer) else {
            throw .issuerMismatch(expected: expectedIssuer, actual: issuer)
        }
        let required = [("authorization_endpoint", authorizationEndpoint), ("token_endpoint", tokenEndpoint),
                        ("jwks_uri", jwksURI)]
        let optional = [("userinfo_endpoint", userinfoEndpoint), ("end_session_endpoint", endSessionEndpoint),
                        ("revocation_endpoint", revocationEndpoint),
                        ("pushed_authorization_request_endpoint", pushedAuthorizationRequestEndpoint)]
        for (field, value) in required + optional.compactMap({ pair in pair.1.map { (pair.0, $0) } }) {
            if let reason = ProviderURL.problem(with: value) {
                throw .invalidEndpoint(field: field, value: value, reason: reason)
            }
        }
        if let methods = codeChallengeMethodsSupported, !methods.contains(PKCEMethod.s256.rawValue) {
            throw .s256NotSupported(advertised: methods)
        }
    }

    /// Whether the provider accepts `method` at the token endpoint. Discovery §3: when the list is
    /// absent, the default is `client_secret_basic`.
    public func supportsTokenEndpointAuthMethod(_ method: ClientAuthMethod) -> Bool {
        (tokenEndpointAuthMethodsSupported ?? [ClientAuthMethod.clientSecretBasic.rawValue]).contains(method.rawValue)
    }

    private static func discoveryError(for error: DecodingError) -> DiscoveryError {
        switch error {
        case .keyNotFound(let key, _):
            // A required endpoint the provider does not publish (Facebook's token_endpoint): the
            // operator can supply it, so the message names the variable.
            if let variable = EndpointOverrides.variable(for: key.stringValue) {
                return .missingEndpoint(field: key.stringValue, variable: variable)
            }
            return .missingField(key.stringValue)
        case .valueNotFound(_, let context):
            if let field = context.codingPath.last?.stringValue, let variable = EndpointOverrides.variable(for: field) {
                return .missingEndpoint(field: field, variable: variable)
            }
            return .missingField(context.codingPath.map(\.stringValue).joined(separator: "."))
        case .typeMismatch(let type, let context):
            return .malformedDocument("\(context.codingPath.map(\.stringValue).joined(separator: ".")) is not a \(type)")
        case .dataCorrupted(let context):
            return .malformedDocument(context.debugDescription)
        @unknown default:
            return .malformedDocument("\(error)")
        }
    }
}
