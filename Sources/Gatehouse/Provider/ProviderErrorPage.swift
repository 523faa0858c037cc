import GatehouseOIDC
import HTTP1

/// What the browser sees when the provider's metadata cannot be used. The operator's reason goes
/// to the log (and `/readyz`); the page says only which kind of problem it is, never a secret.
enum ProviderErrorPage {
    static func page(for error: DiscoveryError) -> HTTPResponse {
        if error.isMisconfiguration {
            return HTMLPage.error(status: 502, title: "Sign-in is misconfigured",
                                  message: "The identity provider's configuration does not match this site's (misconfigured provider). The site's operator has to fix it; trying again will not help.")
        }
        return HTMLPage.error(status: 502, title: "Sign-in is unavailable",
                              message: "The identity provider cannot be reached right now. Please try again shortly.")
    }
}
