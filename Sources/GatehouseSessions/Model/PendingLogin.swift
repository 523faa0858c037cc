/// An authorization request in flight (`/login` → provider → `/callback`). Stored under the hash
/// of `state`; `codeVerifier`, `nonce` and `returnTo` are sealed. Usable once, for a limited time.
public struct PendingLogin: Sendable, Equatable {
    /// Hex SHA-256 of `state` (`SecretHash.hex(of: state)`); `state` itself is never stored.
    public var stateHash: String
    /// Hash of the login-binding cookie that ties this login to the browser that started it.
    public var bindingHash: String
    /// PKCE `code_verifier` (RFC 7636 §4.1). Secret.
    public var codeVerifier: String
    /// OpenID Connect `nonce`. Secret.
    public var nonce: String
    /// Local path to send the browser to after login.
    public var returnTo: String
    public var createdAt: Int64
    public var expiresAt: Int64
    /// The provider the login started at: its callback, and only its, may complete it (mix-up defence).
    public var provider: String = PendingLogin.defaultProvider
    /// Claims the ID token must carry because of how this login was started (Auth0's `org_id` for
    /// an `organization` passed to `/login`), sealed with the login.
    public var requiredClaims: [String: String] = [:]
    /// Step-up: the `acr_values` asked for; the ID token's `acr` must be one of them (empty: any).
    public var acrValues: [String] = []
    /// Step-up: the `max_age` asked for; the ID token's `auth_time` must be within it.
    public var maxAge: Int? = nil
    /// `GATEHOUSE_REQUEST_OBJECT=reference`: the signed (perhaps encrypted) request object the
    /// provider fetches by the `request_uri` of this login.
    public var requestObject: String? = nil

    public static let defaultProvider = "default"

    public init(stateHash: String, bindingHash: String, codeVerifier: String, nonce: String,
                returnTo: String, createdAt: Int64, expiresAt: Int64) {
        self.stateHash = stateHash
        self.bindingHash = bindingHash
        self.codeVerifier = codeVerifier
        self.nonce = nonce
        self.returnTo = returnTo
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

extension PendingLogin: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "PendingLogin(state: \(stateHash.prefix(8))…, provider: \(provider), returnTo: \(returnTo), createdAt: \(createdAt), expiresAt: \(expiresAt))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["stateHash": stateHash, "returnTo": returnTo,
                                "createdAt": createdAt, "expiresAt": expiresAt], displayStyle: .struct)
    }
}
