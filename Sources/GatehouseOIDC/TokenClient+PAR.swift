extension TokenClient {
    /// What the pushed authorization request endpoint answered (RFC 9126 §2.2).
    public struct PushedRequest: Sendable, Equatable {
        /// The reference the browser carries to the authorization endpoint instead of the request.
        public let requestURI: String
        public let expiresIn: Int
    }

    /// Pushes the authorization request's parameters (RFC 9126 §2.1), authenticated as at the token
    /// endpoint, so that the browser sees only `client_id` and `request_uri`.
    ///
    /// - Throws: the provider's OAuth error (`.oauth`), `.unexpectedStatus`, or `.invalidResponse`
    ///   when a `201` lacks `request_uri`/`expires_in`.
    public func pushAuthorizationRequest(_ parameters: [(String, String)], to endpoint: String) async throws(TokenEndpointError) -> PushedRequest {
        // The client authentication adds `client_id` itself (every method but Basic, where it is in
        // the header: §2.1 wants it in the form too, harmlessly).
        var form = parameters.filter { $0.0 != "client_id" }
        if authMethod == .clientSecretBasic { form.append(("client_id", clientID)) }
        let response = try await post(to: endpoint, form)
        guard response.status == 201 || response.status == 200 else { throw Self.failure(response) }
        guard let object = (try? JSONValue.parse(response.body))?.objectValue,
              let requestURI = object["request_uri"]?.stringValue, !requestURI.isEmpty, requestURI.utf8.count <= 2_048 else {
            throw .invalidResponse("the pushed authorization response has no request_uri")
        }
        guard case .number(let seconds)? = object["expires_in"], seconds.isFinite, seconds > 0, seconds < 1e6 else {
            throw .invalidResponse("the pushed authorization response has no usable expires_in")
        }
        return PushedRequest(requestURI: requestURI, expiresIn: Int(seconds))
    }
}
