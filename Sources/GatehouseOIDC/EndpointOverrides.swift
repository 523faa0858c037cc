/// Endpoints the operator sets (`GATEHOUSE_AUTHORIZATION_ENDPOINT`, `GATEHOUSE_TOKEN_ENDPOINT`, …):
/// each wins over the discovery document's value. They exist because real providers publish
/// incomplete documents (Facebook's has no `token_endpoint`).
///
/// For example: `EndpointOverrides(token: "https://graph.facebook.com/oauth/access_token")`.
public struct EndpointOverrides: Sendable, Equatable {
    public var authorization: String?
    public var token: String?
    public var jwks: String?
    public var userinfo: String?
    public var endSession: String?
    public var revocation: String?

    public init(authorization: String? = nil, token: String? = nil, jwks: String? = nil, userinfo: String? = nil,
                endSession: String? = nil, revocation: String? = nil) {
        self.authorization = authorization
        self.token = token
        self.jwks = jwks
        self.userinfo = userinfo
        self.endSession = endSession
        self.revocation = revocation
    }

    /// The discovery field each override replaces, the variable that sets it, and its value.
    public var entries: [(field: String, variable: String, value: String?)] {
        [("authorization_endpoint", "GATEHOUSE_AUTHORIZATION_ENDPOINT", authorization),
         ("token_endpoint", "GATEHOUSE_TOKEN_ENDPOINT", token),
         ("jwks_uri", "GATEHOUSE_JWKS_URI", jwks),
         ("userinfo_endpoint", "GATEHOUSE_USERINFO_ENDPOINT", userinfo),
         ("end_session_endpoint", "GATEHOUSE_END_SESSION_ENDPOINT", endSession),
         ("revocation_endpoint", "GATEHOUSE_REVOCATION_ENDPOINT", revocation)]
    }

    /// The variable that sets a discovery field (`token_endpoint` → `GATEHOUSE_TOKEN_ENDPOINT`).
    public static func variable(for field: String) -> String? {
        EndpointOverrides().entries.first { $0.field == field }?.variable
    }

    /// The document with each set override written over the provider's value.
    func applied(to document: [String: JSONValue]) -> [String: JSONValue] {
        var document = document
        for entry in entries {
            if let value = entry.value { document[entry.field] = .string(value) }
        }
        return document
    }
}
