/// What the gateway tells an upstream about the signed-in user (SPEC "Identity for your own APIs"):
/// the claims of the signed assertion and the identity headers, from one session's claims.
///
/// Pure: the caller gives the session's facts and the clock; nothing here reads a store or signs.
public struct IdentityAssertion: Sendable {
    /// The user's claims from the ID token (and UserInfo), the JSON object the session keeps.
    public let userClaims: [String: JSONValue]
    public let subject: String
    /// The provider's name (`default` with one provider): `idp`.
    public let provider: String
    /// The provider's issuer as configured (`idp_iss`): the canonical form, where Google's ID tokens
    /// may say `accounts.google.com` without the scheme.
    public let providerIssuer: String
    /// A per-session value that is not the cookie: `sid`.
    public let sessionHandle: String

    /// Copied when present with the right JSON type; anything else about the user stays with the gateway.
    static let copiedClaims = ["email", "email_verified", "name", "preferred_username", "groups"]

    /// `GATEHOUSE_GROUPS_CLAIM` of the session's provider: where `groups` is read from.
    public let groupsClaim: String

    public init(claimsJSON: [UInt8], subject: String, provider: String, providerIssuer: String, sessionHandle: String,
                groupsClaim: String = "groups") {
        if case .object(let object)? = try? JSONValue.parse(claimsJSON) {
            userClaims = object
        } else {
            userClaims = [:]
        }
        self.groupsClaim = groupsClaim
        self.subject = subject
        self.provider = provider
        self.providerIssuer = providerIssuer
        self.sessionHandle = sessionHandle
    }

    /// The assertion's claims: `iss` (the gateway's public URL), `aud` (the route's API), `sub`, `idp`,
    /// `idp_iss`, `sid`, `iat`, `exp` = `iat` + `lifetime`, and the copied user claims.
    public func claims(issuer: String, audience: String, issuedAt: Int64, lifetime: Int64) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": .string(subject), "idp": .string(provider),
            "idp_iss": .string(providerIssuer), "sid": .string(sessionHandle),
            "iat": .number(Double(issuedAt)), "exp": .number(Double(issuedAt + lifetime)),
        ]
        if let email = string("email") { claims["email"] = .string(email) }
        if case .bool(let verified)? = userClaims["email_verified"] { claims["email_verified"] = .bool(verified) }
        // Some providers send `"email_verified": "true"` (a string): taken only in that exact spelling.
        if case .string(let text)? = userClaims["email_verified"], text == "true" || text == "false" {
            claims["email_verified"] = .bool(text == "true")
        }
        if let name = string("name") { claims["name"] = .string(name) }
        if let username = string("preferred_username") { claims["preferred_username"] = .string(username) }
        if let groups = groups { claims["groups"] = .array(groups.map(JSONValue.string)) }
        return claims
    }

    /// The user's groups from the provider's groups claim (``GroupsClaim``); nil when there are none.
    public var groups: [String]? {
        let names = GroupsClaim.names(in: userClaims, at: groupsClaim)
        return names.isEmpty ? nil : names
    }

    /// True only for `"email_verified": true` (or Apple's and others' string `"true"`).
    public var emailVerified: Bool {
        switch userClaims["email_verified"] {
        case .bool(let verified)?: return verified
        case .string(let text)?: return text == "true"
        default: return false
        }
    }

    /// The identity headers' values (`identity=headers`): name and value, in this order, for the
    /// claims the session has (the email only when verified; the provider's name always, so that
    /// `sub` at two providers differs). Values that cannot be a header's (control characters) are left out
    /// by the caller's field check; a group name with a comma would be ambiguous, so such groups are
    /// left out here.
    public var headerValues: [(name: String, value: String)] {
        var out = [("X-Forwarded-User", subject), ("X-Forwarded-Provider", provider)]
        // An upstream that trusts the header would take an unverified address for the user's own
        // (oauth2-proxy refuses such logins by default).
        if emailVerified, let email = string("email") { out.append(("X-Forwarded-Email", email)) }
        if let username = string("preferred_username") { out.append(("X-Forwarded-Preferred-Username", username)) }
        if let groups = groups?.filter({ !$0.contains(",") && !$0.isEmpty }), !groups.isEmpty {
            out.append(("X-Forwarded-Groups", groups.joined(separator: ",")))
        }
        return out
    }

    private func string(_ name: String) -> String? {
        guard case .string(let value)? = userClaims[name], !value.isEmpty else { return nil }
        return value
    }
}
