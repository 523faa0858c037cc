import FoundationEssentials
import Gatehouse
import GatehouseCore
import GatehouseOIDC

/// What `gatehouse check` found wrong: a service that does not answer (exit 69) or a
/// configuration the service cannot work with (exit 64).
struct CheckFindings {
    var unavailable = false
    var misconfigured = false
}

/// `gatehouse check` for one provider: its discovery document, then what the configuration asks
/// of it (PAR, DPoP, client authentication and keys, ID-token algorithms, UserInfo), each line
/// naming the provider's own variables.
struct ProviderCheck {
    let config: GatehouseConfiguration
    let provider: ProviderSettings
    let http: HTTPProviderClient

    private var view: GatehouseConfiguration { config.speaking(for: provider) }
    /// One provider: the lines as they always were; several: each names its provider.
    private var named: String { config.hasNamedProviders ? "provider \(provider.name) " : "" }

    private var profileVariable: String {
        config.hasNamedProviders ? ProviderSettings.variablePrefix(for: provider.name) + "PROFILE" : "GATEHOUSE_PROVIDER"
    }

    /// Each provider's variables by their own names (GATEHOUSE_IDP_<NAME>_…).
    private func print(_ line: String) { Swift.print(provider.ownVariableNames(in: line)) }

    /// Whether the provider answered its discovery.
    func run(_ findings: inout CheckFindings) async -> Bool {
        if let problem = ProviderConnection.clientCredentialProblem(view) {
            print("FAIL \(named)client key: \(problem)")
            findings.misconfigured = true
        }
        do {
            let metadata = try await view.discoverProvider(http: http)
            await discovered(metadata, &findings)
            return true
        } catch {
            print("FAIL \(named.isEmpty ? "provider " : named)discovery at \(view.discoveryURL): \(error)")
            if error.isMisconfiguration { findings.misconfigured = true } else { findings.unavailable = true }
        }
        return false
    }

    /// Whether ID tokens can be verified: the algorithms accepted against those advertised and the keys.
    private func idTokenChecks(_ metadata: ProviderMetadata, _ findings: inout CheckFindings) async {
        let algorithms = SigningAlgorithm.allowList(configured: view.idTokenAlgorithms,
                                                    advertised: metadata.idTokenSigningAlgValuesSupported)
        print("     ID token algorithms accepted: \(algorithms.map(\.rawValue).sorted().joined(separator: ", "))")
        let keys = KeySet(metadata: metadata, http: http, configuredAlgorithms: view.idTokenAlgorithms)
        var keyAlgorithms: Set<SigningAlgorithm>?
        do {
            try await keys.refresh()
            keyAlgorithms = await keys.keyAlgorithms
        } catch {
            print("FAIL \(named)jwks_uri \(metadata.jwksURI): \(error)")
            findings.unavailable = true
        }
        if let problem = IDTokenAlgorithmFit.problem(accepted: algorithms, advertised: metadata.idTokenSigningAlgValuesSupported,
                                                     keyAlgorithms: keyAlgorithms) {
            print("FAIL \(named)every login would fail: \(problem)")
            findings.misconfigured = true
        }
    }

    /// How request objects travel (`GATEHOUSE_REQUEST_OBJECT`), and whether the provider takes them so.
    private func requestObjectChecks(_ metadata: ProviderMetadata, _ findings: inout CheckFindings) {
        let mode = view.idp.requestObject
        guard mode.signs else { return }
        if let problem = ProviderConnection.requestObjectProblem(view, metadata: metadata) {
            print("FAIL \(named)request objects: \(problem)")
            findings.misconfigured = true
            return
        }
        let travel = mode == .reference ? "by reference (\(config.publicURL.origin)/request-object/…, fetched by the provider)" : "by value"
        let encrypted = view.idp.requestObjectEncryption == .on ? ", encrypted to the provider's key" : ""
        print("     request objects: signed, \(travel)\(encrypted) (GATEHOUSE_REQUEST_OBJECT=\(mode.rawValue))")
    }

    /// What the configuration asks of the provider, against its metadata.
    private func discovered(_ metadata: ProviderMetadata, _ findings: inout CheckFindings) async {
        let view = self.view
        print("ok   \(named.isEmpty ? "provider " : named)discovery: \(metadata.issuer) (\(profileVariable)=\(view.provider.name.rawValue))")
        if config.hasNamedProviders { print("     redirect URI:  \(view.redirectURI)") }
        print("     authorization: \(metadata.authorizationEndpoint)")
        print("     token:         \(metadata.tokenEndpoint)")
        print("     token request: \(view.tokenRequest.rawValue.uppercased())")
        if metadata.endSessionEndpoint == nil, let template = view.logoutURL {
            print("     end session:   none; GATEHOUSE_LOGOUT_URL \(ProviderHTTPRequest.withoutQuery(template))")
        } else {
            print("     end session:   \(metadata.endSessionEndpoint ?? "none (logout returns to /; set GATEHOUSE_END_SESSION_ENDPOINT or GATEHOUSE_LOGOUT_URL)")")
        }
        print("     revocation:    \(metadata.revocationEndpoint ?? "none (refresh tokens are not revoked at logout)")")
        let parMode = view.idp.pushedAuthorization
        if parMode == .on, metadata.pushedAuthorizationRequestEndpoint == nil {
            print("FAIL \(named)GATEHOUSE_PAR=on, but the provider has no pushed_authorization_request_endpoint (PAR, RFC 9126); set GATEHOUSE_PAR=auto or off")
            findings.misconfigured = true
        } else {
            let pushes = parMode.pushes(endpoint: metadata.pushedAuthorizationRequestEndpoint)
            print("     PAR:           \(pushes ? "pushed to \(metadata.pushedAuthorizationRequestEndpoint ?? "")" : "not used") (GATEHOUSE_PAR=\(parMode.rawValue))")
            print("     DPoP:          \(view.idp.dpop == .on ? "on (tokens bound to a key per session)" : "off") (GATEHOUSE_DPOP=\(view.idp.dpop.rawValue))")
            if view.idp.dpop == .on, !metadata.takesES256DPoPProofs {
                print("FAIL \(named)GATEHOUSE_DPOP=on, but the provider does not list ES256 in dpop_signing_alg_values_supported (RFC 9449); set GATEHOUSE_DPOP=off")
                findings.misconfigured = true
            }
            if !pushes, metadata.requirePushedAuthorizationRequests == true {
                print("FAIL \(named)the provider requires pushed authorization requests, but GATEHOUSE_PAR=off; set GATEHOUSE_PAR=auto")
                findings.misconfigured = true
            }
        }
        requestObjectChecks(metadata, &findings)
        if let api = view.idp.apiURL {
            print("     identity:      the user API at \(api) (OAuth 2.0 without OpenID Connect: no ID token)")
        } else {
            await idTokenChecks(metadata, &findings)
        }
        let method = GatehouseOIDC.ClientAuthMethod(rawValue: view.clientAuthMethod.rawValue) ?? .none
        if let problem = ProviderConnection.authMethodProblem(metadata: metadata, method: method) {
            print("FAIL \(named)token endpoint authentication: \(problem)")
            findings.misconfigured = true
        }
        if method == .privateKeyJWT, let pem = view.clientPrivateKeyPEM,
           let algorithm = ProviderConnection.clientKeyAlgorithm(view, pem: pem, metadata: metadata) {
            let audience = view.securityProfile == .fapi2 ? metadata.issuer : metadata.tokenEndpoint
            print("     client key:    \(algorithm.rawValue) (GATEHOUSE_CLIENT_KEY_ALG=\(view.idp.clientKeyAlgorithm.rawValue)), assertions for \(audience)")
            if let problem = ProviderConnection.keyAlgorithmProblem(metadata: metadata, algorithm: algorithm) {
                print("FAIL \(named)client key: \(problem)")
                findings.misconfigured = true
            }
        }
        let gate = view.idp.loginGate
        if !gate.isOpen {
            print("     sign-in allowed: " + [gate.emailDomains.map { "verified email at " + $0.joined(separator: ", ") },
                                              gate.emails.map { "verified email " + $0.joined(separator: ", ") },
                                              gate.groups.map { "in group " + $0.joined(separator: ", ") }]
                .compactMap { $0 }.joined(separator: "; and "))
        }
        print("     groups claim:  \(view.idp.groupsClaim)")
        if view.userinfo == .always && metadata.userinfoEndpoint == nil {
            print("FAIL \(named)GATEHOUSE_USERINFO is true but the provider has no userinfo_endpoint; set GATEHOUSE_USERINFO_ENDPOINT")
            findings.misconfigured = true
        }
    }
}
