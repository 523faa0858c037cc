/// `GATEHOUSE_DPOP` (per provider `GATEHOUSE_IDP_<NAME>_DPOP`): whether the session's tokens are
/// sender-constrained with DPoP (RFC 9449): one ES256 key per session, kept sealed with it, a proof
/// on every token request and every upstream call (SPEC "FAPI 2.0: PAR and DPoP").
public enum DPoPMode: String, Sendable, Equatable {
    case off
    case on
}
