import GatehouseCore

/// Builds the `Set-Cookie` values of the session cookie and of the short-lived login-binding
/// cookie (SPEC "Session cookie"; RFC 6265bis).
///
/// Both are `HttpOnly`, `Path=/` and `Secure` when the public URL is https. The login-binding
/// cookie is always host-only; the session cookie too (as `__Host-` demands), unless
/// `GATEHOUSE_COOKIE_DOMAIN` shares it with that domain's subdomains (its name is then `__Secure-`).
///
/// By default the session cookie has no `Max-Age`/`Expires`: it is a
/// browser-session cookie whose real lifetime is enforced server-side; with
/// `GATEHOUSE_SESSION_PERSISTENT=true` it gets `Max-Age` = the session's remaining absolute lifetime.
///
/// For example: `SessionCookie(configuration: config).set(sessionID)`.
public struct SessionCookie: Sendable, Equatable {
    public var name: String
    public var sameSite: SameSitePolicy
    public var secure: Bool
    public var persistence: SessionCookiePersistence = .browserSession
    /// `GATEHOUSE_COOKIE_DOMAIN`, on the session cookie only.
    public var domain: String? = nil

    /// How long a login may stay pending, and so the login-binding cookie's `Max-Age`.
    public static let loginBindingMaxAge = 600

    public init(name: String, sameSite: SameSitePolicy, secure: Bool) {
        self.name = name
        self.sameSite = sameSite
        self.secure = secure
    }

    public init(configuration: GatehouseConfiguration) {
        self.init(name: configuration.cookieName, sameSite: configuration.cookieSameSite, secure: configuration.cookieSecure)
        persistence = configuration.sessionCookiePersistence
        domain = configuration.cookieDomain
    }

    /// `name=value; Path=/; HttpOnly; SameSite=…[; Secure]`, and `; Max-Age=N` (the seconds from
    /// `now` to the session's absolute `expiresAt`) when the cookie is persistent.
    public func set(_ value: String, sessionExpiresAt expiresAt: Int64, now: Int64) -> String {
        let cookie = "\(name)=\(value)\(attributes(sameSite: sameSite))\(domainAttribute)"
        guard persistence == .untilSessionEnds else { return cookie }
        return cookie + "; Max-Age=\(max(0, expiresAt - now))"
    }

    /// Deletes the session cookie in the browser (logout, ended session).
    public func expire() -> String {
        "\(name)=\(attributes(sameSite: sameSite))\(domainAttribute); Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT"
    }

    private var domainAttribute: String { domain.map { "; Domain=" + $0 } ?? "" }

    /// `<name>-login`: appending keeps a `__Host-` prefix in front (`__Host-Http-gatehouse-login`).
    public var loginBindingName: String { name + "-login" }

    /// The login-binding cookie: `SameSite=Lax`, because the provider's redirect back to
    /// `/callback` is a cross-site top-level navigation that a `Strict` cookie would not follow.
    /// `crossSitePost` (`GATEHOUSE_RESPONSE_MODE=form_post`): the provider's answer is a cross-site
    /// `POST`, which carries no `Lax` cookie: `SameSite=None` then (on https; browsers refuse
    /// `None` without `Secure`, and on plain http a same-site provider is all that can work).
    public func setLoginBinding(_ value: String, crossSitePost: Bool = false) -> String {
        let sameSite = crossSitePost && secure ? "None" : SameSitePolicy.lax.rawValue
        return "\(loginBindingName)=\(value)\(attributes(sameSite: sameSite)); Max-Age=\(Self.loginBindingMaxAge)"
    }

    private func attributes(sameSite: SameSitePolicy) -> String {
        attributes(sameSite: sameSite.rawValue)
    }

    private func attributes(sameSite: String) -> String {
        "; Path=/; HttpOnly; SameSite=\(sameSite)" + (secure ? "; Secure" : "")
    }
}
