/// `GATEHOUSE_RESPONSE_MODE` (per provider `GATEHOUSE_IDP_<NAME>_RESPONSE_MODE`): how the provider
/// returns the authorization response. `query` (the default): a redirect to `/callback?code=…`.
/// `form_post` (OAuth 2.0 Form Post Response Mode; Sign in with Apple requires it): an auto-submitted
/// cross-site `POST` to the callback, so the code never sits in the address bar, the history or a
/// `Referer`; the login-binding cookie is then `SameSite=None` so that it comes with that `POST`.
public enum ResponseMode: String, Sendable, Equatable {
    case query
    case formPost = "form_post"

    /// The callback's method for this mode.
    public var callbackMethod: String { self == .formPost ? "POST" : "GET" }
}
