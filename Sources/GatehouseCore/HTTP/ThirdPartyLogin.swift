/// Third-party initiated login (OpenID Connect Core §4): a provider (or a portal) sends the browser
/// to `/login?iss=…[&login_hint=…][&target_link_uri=…]`, naming the provider by its issuer.
///
/// The issuer must be one configured (else `400`: the login is never started at an issuer taken
/// from a link); `login_hint` goes on to the authorization request, as §4 requires; and
/// `target_link_uri` becomes `returnTo` only when it is one `/login` would accept (a page of this
/// site or of a `GATEHOUSE_CORS_ORIGINS` origin), else the login returns to `/`.
public struct ThirdPartyLogin: Sendable, Equatable {
    /// The provider's name.
    public let provider: String
    /// The page to return to, validated; nil for the default.
    public let returnTo: String?
    public let loginHint: String?

    public enum Problem: Error, Equatable {
        /// No configured provider has this issuer.
        case unknownIssuer
        /// `provider=` names another provider than `iss`.
        case otherProvider
    }

    /// - Parameters:
    ///   - providers: every configured provider's name and issuer, in order.
    ///   - named: the `provider=` parameter, when the link has one too.
    public static func resolve(iss: String, loginHint: String?, targetLinkURI: String?,
                               providers: [(name: String, issuer: String)], named: String?,
                               publicOrigin: String, corsOrigins: [String]) -> Result<ThirdPartyLogin, Problem> {
        guard let match = providers.first(where: { $0.issuer == iss }) else { return .failure(.unknownIssuer) }
        if let named, named != match.name { return .failure(.otherProvider) }
        let hint = loginHint.flatMap { $0.isEmpty || $0.utf8.count > 512 ? nil : $0 }
        return .success(ThirdPartyLogin(provider: match.name, returnTo: targetLinkURI.flatMap {
            returnTo(from: $0, publicOrigin: publicOrigin, corsOrigins: corsOrigins)
        }, loginHint: hint))
    }

    /// `target` as a `returnTo`: a page of this site becomes its local path.
    static func returnTo(from target: String, publicOrigin: String, corsOrigins: [String]) -> String? {
        if target.hasPrefix(publicOrigin) {
            let rest = String(target.dropFirst(publicOrigin.utf8.count))
            if rest.isEmpty { return "/" }
            if rest.hasPrefix("/") { return ReturnTo.validate(rest) }
            return nil
        }
        return ReturnTo.validate(target, allowedOrigins: corsOrigins)
    }
}
