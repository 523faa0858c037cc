/// `GATEHOUSE_REQUEST_OBJECT` (per provider `GATEHOUSE_IDP_<NAME>_REQUEST_OBJECT`): whether the
/// authorization request travels as a request object (RFC 9101, OIDC Core §6.1): a JWT signed with
/// the client key (`GATEHOUSE_CLIENT_PRIVATE_KEY`), so neither the browser nor anything on its way
/// can change a parameter unseen; pushed with PAR when PAR is used.
public enum RequestObjectMode: String, Sendable, Equatable {
    case off
    case on
}
