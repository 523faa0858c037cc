import FoundationEssentials
import GatehouseEncoding

/// `GATEHOUSE_LOGOUT_URL`: where the browser goes to sign out at a provider that publishes no
/// `end_session_endpoint` (Auth0 tenants without "RP-Initiated Logout End Session Endpoint
/// Discovery" use `https://{tenant}/v2/logout?client_id=…&returnTo=…`, Auth0 "Log Users Out of Auth0").
///
/// For example:
/// `LogoutURLTemplate.expand("https://t.auth0.com/v2/logout?client_id={client_id}&returnTo={post_logout_redirect_uri}", …)`
public enum LogoutURLTemplate {
    public static let clientID = "{client_id}"
    public static let postLogoutRedirectURI = "{post_logout_redirect_uri}"
    public static let idTokenHint = "{id_token_hint}"
    public static let placeholders = [clientID, postLogoutRedirectURI, idTokenHint]

    /// The template with each placeholder replaced by its value, percent-encoded as a query
    /// component (a redirect URI holding `&` or `#` cannot change the URL's shape). A missing ID
    /// token leaves its placeholder empty.
    public static func expand(_ template: String, clientID: String, postLogoutRedirectURI: String,
                              idTokenHint: String?) -> String {
        template
            .replacing(Self.clientID, with: PercentEncoding.encodeQueryComponent(clientID))
            .replacing(Self.postLogoutRedirectURI,
                                  with: PercentEncoding.encodeQueryComponent(postLogoutRedirectURI))
            .replacing(Self.idTokenHint, with: PercentEncoding.encodeQueryComponent(idTokenHint ?? ""))
    }
}

extension EndSessionRequest {
    /// Where logout sends the browser: the provider's `end_session_endpoint` (discovered or
    /// `GATEHOUSE_END_SESSION_ENDPOINT`), else the `GATEHOUSE_LOGOUT_URL` template, else nil (`/`).
    public static func location(metadata: ProviderMetadata, logoutTemplate: String?, idTokenHint: String?,
                                postLogoutRedirectURI: String, clientID: String, state: String? = nil) -> String? {
        if let url = url(metadata: metadata, idTokenHint: idTokenHint, postLogoutRedirectURI: postLogoutRedirectURI,
                         clientID: clientID, state: state) {
            return url
        }
        return logoutTemplate.map {
            LogoutURLTemplate.expand($0, clientID: clientID, postLogoutRedirectURI: postLogoutRedirectURI,
                                     idTokenHint: idTokenHint)
        }
    }
}
