/// `GATEHOUSE_PAR` (per provider `GATEHOUSE_IDP_<NAME>_PAR`): whether the authorization request is
/// pushed to the provider's `pushed_authorization_request_endpoint` (RFC 9126) so that the browser
/// carries only `client_id` and `request_uri` (SPEC "FAPI 2.0: PAR and DPoP").
public enum PushedAuthorizationMode: String, Sendable, Equatable {
    /// Pushed when discovery lists the endpoint (the default).
    case auto
    /// Always pushed; a provider without the endpoint is a configuration error (`serve`/`check` stop).
    case on
    /// Never pushed.
    case off

    /// Whether a login at a provider whose discovery lists `endpoint` pushes its request.
    public func pushes(endpoint: String?) -> Bool {
        switch self {
        case .auto: endpoint != nil
        case .on: true
        case .off: false
        }
    }
}
