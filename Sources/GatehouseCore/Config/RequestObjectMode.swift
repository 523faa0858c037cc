/// `GATEHOUSE_REQUEST_OBJECT` (per provider `GATEHOUSE_IDP_<NAME>_REQUEST_OBJECT`): whether the
/// authorization request travels as a request object (RFC 9101, OIDC Core §6.1): a JWT signed with
/// the client key (`GATEHOUSE_CLIENT_PRIVATE_KEY`), so neither the browser nor anything on its way
/// can change a parameter unseen; pushed with PAR when PAR is used.
public enum RequestObjectMode: String, Sendable, Equatable {
    case off
    /// By value: the `request` parameter.
    case on
    /// By reference (RFC 9101 §5.2, OIDC Core §6.2): Gatehouse hosts the object at
    /// `/request-object/{handle}` for the provider to fetch, and the browser carries `request_uri`.
    case reference

    public var signs: Bool { self != .off }
}

/// `GATEHOUSE_REQUEST_OBJECT_ENCRYPTION` (per provider): whether the signed request object is also
/// encrypted to the provider's encryption key (a nested JWT, OIDC Core §6.1, §10.2), so only the
/// provider reads the parameters (`login_hint`, `claims`) however the object travels.
public enum RequestObjectEncryptionMode: String, Sendable, Equatable {
    case off
    case on
}
