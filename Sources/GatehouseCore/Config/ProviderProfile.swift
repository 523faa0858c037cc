/// `GATEHOUSE_TOKEN_REQUEST`: how parameters travel to the token endpoint.
public enum TokenRequestMethod: String, Sendable, Equatable, CaseIterable {
    /// A form-encoded body (RFC 6749 §4.1.3): every standard provider.
    case post
    /// The query string: Facebook's Graph API `GET /oauth/access_token` ("Manually Build a Login
    /// Flow", "Exchanging Code for an Access Token").
    case get
}

/// `GATEHOUSE_PROVIDER`: a preset of defaults for one provider as its public documents describe it.
/// A profile holds values only; each is also reachable through its own variable, which wins.
///
/// For example: `ProviderProfile.named(.google).defaultScopes` is `openid profile email`.
public struct ProviderProfile: Sendable, Equatable {
    public enum Name: String, Sendable, Equatable, CaseIterable {
        case generic, auth0, google, facebook, keycloak, entra, okta, apple, github
    }

    /// How a token's `iss` is matched (the raw values are `GatehouseOIDC.IssuerPolicy`'s).
    public enum IssuerForms: String, Sendable, Equatable {
        case exact
        /// Google: `accounts.google.com` with or without `https://`.
        case schemeOptional
        /// Entra ID: `https://login.microsoftonline.com/{tenantid}/v2.0` with the token's `tid`.
        case tenantTemplate
    }

    public let name: Name
    /// `GATEHOUSE_SCOPES` when unset.
    public var defaultScopes = "openid profile email offline_access"
    /// `GATEHOUSE_AUTH_PARAMS` when unset.
    public var defaultAuthParams: String?
    /// `GATEHOUSE_TOKEN_REQUEST` when unset.
    public var tokenRequest = TokenRequestMethod.post
    /// `GATEHOUSE_TOKEN_ENDPOINT` when unset (the provider's discovery document lacks it).
    public var tokenEndpoint: String?
    /// `GATEHOUSE_CLIENT_AUTH_METHOD` when unset and a secret is set.
    public var clientAuthMethodWithSecret = ClientAuthMethod.clientSecretBasic
    /// Whether the provider's token endpoint requires the client secret among query parameters
    /// (only Facebook's Graph API): otherwise `get` with a secret in the URL is refused.
    public var secretInTokenQuery = false
    public var issuerForms = IssuerForms.exact
    /// Whether the discovery document's documented URL ends in `/` (Facebook: "Facebook Login for
    /// the Web with the JavaScript SDK… OIDC": `https://www.facebook.com/.well-known/openid-configuration/`).
    public var discoveryPathEndsWithSlash = false
    /// `GATEHOUSE_ISSUER` when unset (a provider with one issuer for every client).
    public var defaultIssuer: String?
    /// `GATEHOUSE_RESPONSE_MODE` when unset.
    public var defaultResponseMode = ResponseMode.query
    /// Whether the client secret is a JWT Gatehouse signs (`AppleClientSecret`) from the client key
    /// and `GATEHOUSE_APPLE_TEAM_ID` / `GATEHOUSE_APPLE_KEY_ID`, never a configured string.
    public var signsClientSecret = false
    /// Whether the provider speaks OpenID Connect (discovery, an ID token, `openid` among the
    /// scopes); without it the user's identity comes from the provider's user API (`apiURL`).
    public var openIDConnect = true
    /// `GATEHOUSE_API_URL` when unset: the REST API the identity is read from (GitHub).
    public var defaultAPIURL: String?

    public init(name: Name) { self.name = name }

    /// The provider's own name for buttons and the chooser page; nil for `generic`.
    public var displayName: String? {
        switch name {
        case .generic: nil
        case .auth0: "Auth0"
        case .google: "Google"
        case .facebook: "Facebook"
        case .keycloak: "Keycloak"
        case .entra: "Microsoft"
        case .okta: "Okta"
        case .apple: "Apple"
        case .github: "GitHub"
        }
    }

    /// The preset of each provider.
    public static func named(_ name: Name) -> ProviderProfile {
        var profile = ProviderProfile(name: name)
        switch name {
        case .generic, .okta, .auth0:
            // Okta and Auth0 publish complete discovery documents and refresh only with
            // `offline_access`; Auth0's logout fallback depends on the issuer (``defaultLogoutURL(issuer:)``).
            break
        case .keycloak:
            // Keycloak issues a refresh token without `offline_access`, one that ends with the
            // user's SSO session; with it, an offline token that outlives a logout at Keycloak
            // (Server Administration Guide, "Offline access"), so a Gatehouse session would too.
            profile.defaultScopes = "openid profile email"
        case .google:
            // Google refuses `offline_access` (invalid_scope); a refresh token comes with
            // `access_type=offline` ("Using OAuth 2.0 for Web Server Applications", "Refreshing an
            // access token (offline access)").
            profile.defaultScopes = "openid profile email"
            profile.defaultAuthParams = "access_type=offline"
            profile.issuerForms = .schemeOptional
        case .facebook:
            // Permissions, not OIDC scopes: `profile` is refused ("Permissions Reference"); no refresh
            // token exists, the Graph API exchange is a GET taking client_id and client_secret as
            // query parameters ("Manually Build a Login Flow").
            profile.defaultScopes = "openid public_profile email"
            profile.tokenRequest = .get
            profile.tokenEndpoint = "https://graph.facebook.com/oauth/access_token"
            profile.clientAuthMethodWithSecret = .clientSecretPost
            profile.secretInTokenQuery = true
            profile.discoveryPathEndsWithSlash = true
        case .entra:
            profile.issuerForms = .tenantTemplate
        case .apple:
            // Sign in with Apple ("Request an authorization to the Sign in with Apple server"):
            // scopes `name email`; `response_mode=form_post` is required when either is asked for;
            // the client secret is an ES256 JWT signed with the `.p8` key ("Creating a client
            // secret"), sent in the body. No refresh beyond the session: Apple's refresh tokens
            // only revalidate the user (at most once a day).
            profile.defaultIssuer = "https://appleid.apple.com"
            profile.defaultScopes = "openid name email"
            profile.defaultResponseMode = .formPost
            profile.clientAuthMethodWithSecret = .clientSecretPost
            profile.signsClientSecret = true
        case .github:
            // OAuth 2.0 without OpenID Connect ("Authorizing OAuth apps"): the authorization and
            // token endpoints under the web host (GitHub Enterprise Server: its own host), the user
            // from the REST API (`GET /user`, `/user/emails`, `/user/orgs`, `/user/teams`), which
            // is `https://api.github.com`, or `https://HOST/api/v3` on Enterprise Server.
            profile.defaultIssuer = "https://github.com"
            profile.defaultScopes = "read:user user:email"
            profile.clientAuthMethodWithSecret = .clientSecretPost
            profile.openIDConnect = false
            profile.defaultAPIURL = "https://api.github.com"
        }
        return profile
    }

    /// `GATEHOUSE_LOGOUT_URL` when unset: Auth0's `/v2/logout` for tenants whose discovery
    /// document has no `end_session_endpoint` (Auth0, "Log Users Out of Auth0 with OIDC Endpoint":
    /// `returnTo` must be listed in "Allowed Logout URLs").
    public func defaultLogoutURL(issuer: String) -> String? {
        guard name == .auth0 else { return nil }
        var base = issuer
        while base.hasSuffix("/") { base.removeLast() }
        return base + "/v2/logout?client_id={client_id}&returnTo={post_logout_redirect_uri}"
    }
}
