extension TokenClient {
    /// Trades a Facebook user access token (one to two hours) for a long-lived one (about 60 days):
    /// `grant_type=fb_exchange_token` at the token endpoint with the app's credentials ("Long-Lived
    /// Access Tokens", Facebook Login documentation). Facebook has no refresh tokens; this is how a
    /// session outlives the short token.
    public func longLivedToken(for accessToken: String) async throws(TokenEndpointError) -> TokenResponse {
        guard authMethod != .none else {
            throw .invalidConfiguration("the long-lived token exchange needs the app secret (the client is public)")
        }
        return try await postForTokens([("grant_type", "fb_exchange_token"), ("fb_exchange_token", accessToken)])
    }
}
