extension TokenClient {
    /// Asks for a token of the client itself (RFC 6749 §4.4.2), authenticated with the configured
    /// method (`client_secret_basic`/`_post`, `client_secret_jwt`, `private_key_jwt`).
    ///
    /// For example: `try await client.clientCredentials(scope: "reports.read", audience: nil)`.
    /// - Parameters:
    ///   - scope: space-separated scopes; nil leaves the provider's default.
    ///   - audience: the `audience` parameter (Auth0, Okta) naming the API; nil sends none.
    /// - Returns: the response; a `refresh_token` in it is ignored by callers (§4.4.3: none is due).
    /// - Throws: ``TokenEndpointError/invalidConfiguration(_:)`` for a public client (§4.4: the grant
    ///   is for confidential clients only), else what the token endpoint answered.
    public func clientCredentials(scope: String?, audience: String?) async throws(TokenEndpointError) -> TokenResponse {
        guard authMethod != .none else {
            throw .invalidConfiguration("the client-credentials grant needs client authentication (the client is public)")
        }
        var parameters = [("grant_type", "client_credentials")]
        if let scope { parameters.append(("scope", scope)) }
        if let audience { parameters.append(("audience", audience)) }
        return try await postForTokens(parameters)
    }
}
