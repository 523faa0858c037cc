/// Why the provider's discovery document (OpenID Connect Discovery 1.0) cannot be used.
/// Each description says what the operator should check.
public enum DiscoveryError: Error, Sendable, Equatable, CustomStringConvertible {
    case transport(ProviderTransportError)
    case unexpectedStatus(Int, url: String)
    case malformedDocument(String)
    case issuerMismatch(expected: String, actual: String)
    case missingField(String)
    /// A required endpoint absent from the document and not set by its variable.
    case missingEndpoint(field: String, variable: String)
    case invalidEndpoint(field: String, value: String, reason: String)
    case s256NotSupported(advertised: [String])
    /// A feature the configuration requires that the provider does not advertise (`GATEHOUSE_PAR=on`
    /// at a provider without `pushed_authorization_request_endpoint`); `otherValues` are the values
    /// of `variable` that would start (`GATEHOUSE_DPOP` has no `auto`).
    case requiredFeatureMissing(feature: String, field: String, variable: String, otherValues: String)
    /// The document says the provider does not do what a setting needs (`request_uri_parameter_supported:
    /// false` under `GATEHOUSE_REQUEST_OBJECT=reference`).
    case featureNotOffered(setting: String, feature: String, field: String, instead: String)

    public var description: String {
        switch self {
        case .transport(let error):
            "cannot fetch the discovery document: \(error); check GATEHOUSE_ISSUER and the network path to the provider"
        case .unexpectedStatus(let status, let url):
            "discovery document \(url) answered HTTP \(status); check GATEHOUSE_ISSUER (discovery is at {issuer}/.well-known/openid-configuration)"
        case .malformedDocument(let reason):
            "the discovery document is not valid JSON metadata: \(reason)"
        case .issuerMismatch(let expected, let actual):
            "the discovery document's issuer \"\(actual)\" differs from GATEHOUSE_ISSUER \"\(expected)\"; set GATEHOUSE_ISSUER to exactly the provider's issuer (mind a trailing slash)"
        case .missingField(let field):
            "the discovery document lacks \(field)"
        case .missingEndpoint(let field, let variable):
            "the discovery document has no \(field); set \(variable) to the provider's endpoint"
        case .invalidEndpoint(let field, let value, let reason):
            "the discovery document's \(field) \"\(value)\" \(reason)"
        case .requiredFeatureMissing(let feature, let field, let variable, let otherValues):
            "\(variable)=on requires \(feature), but the discovery document has no \(field); set \(variable)=\(otherValues), or use a provider that supports it"
        case .featureNotOffered(let setting, let feature, let field, let instead):
            "\(setting) needs \(feature), but the discovery document's \(field) says the provider does not offer it; \(instead)"
        case .s256NotSupported(let advertised):
            "the provider's code_challenge_methods_supported (\(advertised.joined(separator: ", "))) lacks S256; Gatehouse requires PKCE with S256"
        }
    }
}

extension DiscoveryError {
    /// The provider answers, but its metadata does not fit this gateway's configuration (issuer
    /// mismatch, an unusable endpoint, no S256, a missing field): waiting will not help, the
    /// operator must act. The others (network, HTTP status, a garbled document) may be transient.
    public var isMisconfiguration: Bool {
        switch self {
        case .issuerMismatch, .invalidEndpoint, .s256NotSupported, .missingField, .missingEndpoint,
             .requiredFeatureMissing, .featureNotOffered: true
        case .transport, .unexpectedStatus, .malformedDocument: false
        }
    }
}

extension DiscoveryError {
    /// A first discovery failing so stops `serve`: the provider answers, and what the configuration
    /// needs is not there (an endpoint no variable supplies, PAR required but not offered).
    public var stopsServe: Bool {
        switch self {
        case .missingEndpoint, .requiredFeatureMissing, .featureNotOffered: true
        default: false
        }
    }
}
