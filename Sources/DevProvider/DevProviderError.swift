/// Failures of the development provider's Swift API (HTTP errors are answered, not thrown).
public enum DevProviderError: Error, Equatable, Sendable {
    /// The configuration cannot work; each string names one problem.
    case invalidConfiguration([String])
    /// Back-channel logout could not be delivered to some clients (RFC: OpenID Connect Back-Channel
    /// Logout 1.0 §2.8 expects `200`); the others were delivered.
    case backchannelLogoutFailed([BackchannelLogoutFailure])
    /// The logout token could not be signed.
    case signingFailed(String)
}

/// One client that did not accept a back-channel logout token.
public struct BackchannelLogoutFailure: Equatable, Sendable {
    public var clientID: String
    /// The HTTP status the client answered, nil when it could not be reached.
    public var status: Int?
    public var reason: String

    public init(clientID: String, status: Int?, reason: String) {
        self.clientID = clientID
        self.status = status
        self.reason = reason
    }
}
