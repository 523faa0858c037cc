import GatehouseCore
import GatehouseOIDC

/// The provider-profile settings of the configuration as the OIDC layer takes them.
extension GatehouseConfiguration {
    /// The endpoint overrides (`GATEHOUSE_*_ENDPOINT`, `GATEHOUSE_JWKS_URI`, the profile's token endpoint).
    public var discoveryOverrides: EndpointOverrides {
        EndpointOverrides(authorization: endpointOverrides["GATEHOUSE_AUTHORIZATION_ENDPOINT"],
                          token: endpointOverrides["GATEHOUSE_TOKEN_ENDPOINT"],
                          jwks: endpointOverrides["GATEHOUSE_JWKS_URI"],
                          userinfo: endpointOverrides["GATEHOUSE_USERINFO_ENDPOINT"],
                          endSession: endpointOverrides["GATEHOUSE_END_SESSION_ENDPOINT"],
                          revocation: endpointOverrides["GATEHOUSE_REVOCATION_ENDPOINT"])
    }

    /// The profile's issuer rule.
    public var issuerPolicy: IssuerPolicy { IssuerPolicy(rawValue: provider.issuerForms.rawValue) ?? .exact }

    /// The HTTP method of token-endpoint calls.
    public var tokenRequestHTTPMethod: ProviderHTTPRequest.Method { tokenRequest == .get ? .get : .post }

    /// Discovery with this configuration's overrides and issuer rule (`serve` and `check` alike).
    /// A provider without OpenID Connect (GitHub) has no discovery: its profile's endpoints.
    public func discoverProvider(http: any ProviderHTTPClient) async throws(DiscoveryError) -> ProviderMetadata {
        if !provider.openIDConnect { return GitHubUserAPI.metadata(issuer: issuer) }
        return try await ProviderMetadata.discover(issuer: issuer, http: http, overrides: discoveryOverrides,
                                            issuerPolicy: issuerPolicy, discoveryURL: discoveryURL)
    }
}
