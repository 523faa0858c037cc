extension TokenClient {
    /// RFC 8693 §2.1's names for the token types exchanged here.
    public static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    public static let tokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange"

    /// An access token for another API in exchange for the user's (RFC 8693 §2.1):
    /// `subject_token` = the user's access token, `requested_token_type` = an access token, with
    /// the API named by `audience` (a logical name), `resource` (a URI, RFC 8707) and/or `scope`.
    ///
    /// For example: `try await client.exchangeToken(subjectToken: user, audience: "orders-api", resource: nil, scope: nil)`.
    /// - Returns: the response; its `refresh_token`, if any, is not used (a new exchange is cheaper
    ///   than a second refresh token per session to keep and rotate).
    /// - Throws: what the token endpoint answered (`invalid_target`, `invalid_request`, … as `.oauth`),
    ///   or ``TokenEndpointError/invalidResponse(_:)`` when it issued another kind of token.
    public func exchangeToken(subjectToken: String, audience: String?, resource: String?,
                              scope: String?, dpop: DPoPKey? = nil) async throws(TokenEndpointError) -> TokenResponse {
        var parameters = [("grant_type", Self.tokenExchangeGrant), ("subject_token", subjectToken),
                          ("subject_token_type", Self.accessTokenType), ("requested_token_type", Self.accessTokenType)]
        if let audience { parameters.append(("audience", audience)) }
        if let resource { parameters.append(("resource", resource)) }
        if let scope { parameters.append(("scope", scope)) }
        let response = try await postForTokens(parameters, dpop: dpop)
        // §2.2.1: `issued_token_type` is required; a provider that leaves it out issued what was asked.
        if let issued = response.issuedTokenType, issued != Self.accessTokenType {
            throw .invalidResponse("issued_token_type \"\(issued.prefix(80))\" is not an access token")
        }
        return response
    }

    /// A refresh-token grant for another API's token (RFC 6749 §6 with RFC 8707 §2.2 `resource`,
    /// or a per-API `scope` as Microsoft Entra issues per-resource tokens). A `refresh_token` in the
    /// response replaces the session's: the caller stores it as any refresh does.
    public func refresh(refreshToken: String, resource: String?, scope: String?,
                        dpop: DPoPKey? = nil) async throws(TokenEndpointError) -> TokenResponse {
        var parameters = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
        if let resource { parameters.append(("resource", resource)) }
        if let scope { parameters.append(("scope", scope)) }
        return try await postForTokens(parameters, dpop: dpop)
    }
}
