import FoundationEssentials

/// The user's identity from GitHub's REST API, for a provider without OpenID Connect ("Authorizing
/// OAuth apps"; REST API "Users", "Emails", "Organizations", "Teams"). The claims are the ones an
/// ID token would carry, so everything after the callback is the same as for any provider:
/// - `sub`: the numeric user id as a string (a login can be renamed and reused; the id cannot);
/// - `preferred_username` the login, `name`, `picture` the avatar URL;
/// - `email` only the primary address and only when GitHub has verified it (`email_verified: true`):
///   an unverified primary, or a verified secondary, names no one;
/// - `groups` the organisations' logins and `ORG/TEAM` slugs, read only with `read:org` (without it
///   GitHub lists public memberships only, which would make group rules depend on the user's
///   privacy settings).
public struct GitHubUserAPI: Sendable {
    /// The REST API base: `https://api.github.com`, or `https://HOST/api/v3` (Enterprise Server).
    public let baseURL: String
    public let http: any ProviderHTTPClient
    /// Whether the scopes include `read:org` (then `groups` is read).
    public let readsOrganizations: Bool

    /// GitHub pages lists (30 by default, at most 100 a page, `Link: <…>; rel="next"`): pages of 100
    /// are followed up to this many, so a user's groups are complete up to 1,000 organisations
    /// and as many teams, and a hostile API cannot keep the login waiting page after page.
    static let perPage = 100
    static let maximumPages = 10

    public init(baseURL: String, http: any ProviderHTTPClient, readsOrganizations: Bool) {
        self.baseURL = baseURL
        self.http = http
        self.readsOrganizations = readsOrganizations
    }

    /// The claims of the user the access token belongs to. `grantedScope`: the token answer's
    /// `scope` (GitHub lists what the user granted, comma-separated): without `read:org` there,
    /// the user unticked it, and the login goes on without groups rather than failing at `/user/teams`.
    public func claims(accessToken: String, issuer: String, grantedScope: String? = nil) async throws(UserInfoError) -> [String: JSONValue] {
        let user = try await get("/user", accessToken: accessToken).objectValue ?? [:]
        guard let id = user["id"]?.numberValue, id >= 1, id == id.rounded(), id < 1e15 else {
            throw .malformed("GitHub /user has no numeric id")
        }
        var claims: [String: JSONValue] = ["sub": .string(String(Int64(id))), "iss": .string(issuer)]
        if let login = user["login"]?.stringValue { claims["preferred_username"] = .string(login) }
        if let name = user["name"]?.stringValue, !name.isEmpty { claims["name"] = .string(name) }
        if let avatar = user["avatar_url"]?.stringValue { claims["picture"] = .string(avatar) }
        if let email = Self.verifiedPrimaryEmail(try await get("/user/emails", accessToken: accessToken)) {
            claims["email"] = .string(email)
            claims["email_verified"] = .bool(true)
        }
        if readsOrganizations, Self.granted("read:org", in: grantedScope) {
            let organisations = try await pages("/user/orgs", accessToken: accessToken)
            let teams = try await pages("/user/teams", accessToken: accessToken)
            claims["groups"] = .array(Self.groups(organisations: organisations, teams: teams).map(JSONValue.string))
        }
        return claims
    }

    /// Whether `scope` was granted: listed in the answer's scopes (by comma or space), or the
    /// answer did not say (then the request's scopes stand).
    static func granted(_ scope: String, in grantedScope: String?) -> Bool {
        guard let grantedScope else { return true }
        return grantedScope.split(whereSeparator: { $0 == "," || $0 == " " }).contains { $0 == scope }
    }

    /// Every page of a list (up to `maximumPages`), as one array.
    private func pages(_ path: String, accessToken: String) async throws(UserInfoError) -> JSONValue {
        var all: [JSONValue] = []
        for page in 1...Self.maximumPages {
            let (value, hasNext) = try await getPage(path + "?per_page=\(Self.perPage)&page=\(page)", accessToken: accessToken)
            let items = value.arrayValue ?? []
            all += items
            guard hasNext, items.count == Self.perPage else { break }
        }
        return .array(all)
    }

    /// The primary address when GitHub has verified it.
    static func verifiedPrimaryEmail(_ emails: JSONValue) -> String? {
        for entry in emails.arrayValue ?? [] {
            guard let email = entry.objectValue, email["primary"]?.boolValue == true else { continue }
            guard email["verified"]?.boolValue == true, let address = email["email"]?.stringValue, !address.isEmpty else { return nil }
            return address
        }
        return nil
    }

    /// `ORG` for each organisation, `ORG/TEAM` for each team, each once, in GitHub's order.
    static func groups(organisations: JSONValue, teams: JSONValue) -> [String] {
        var groups: [String] = []
        for organisation in organisations.arrayValue ?? [] {
            if let login = organisation.objectValue?["login"]?.stringValue, !groups.contains(login) { groups.append(login) }
        }
        for team in teams.arrayValue ?? [] {
            guard let team = team.objectValue, let slug = team["slug"]?.stringValue,
                  let organisation = team["organization"]?.objectValue?["login"]?.stringValue else { continue }
            let name = organisation + "/" + slug
            if !groups.contains(name) { groups.append(name) }
        }
        return groups
    }

    /// One API call: `200` with JSON, else the status.
    private func get(_ path: String, accessToken: String) async throws(UserInfoError) -> JSONValue {
        try await getPage(path, accessToken: accessToken).value
    }

    /// One API call, and whether its `Link` header names a next page.
    private func getPage(_ path: String, accessToken: String) async throws(UserInfoError) -> (value: JSONValue, hasNext: Bool) {
        let request = ProviderHTTPRequest(method: .get, url: baseURL + path, headers: [
            ProviderHTTPHeader("Authorization", "Bearer " + accessToken),
            ProviderHTTPHeader("Accept", "application/vnd.github+json"),
            ProviderHTTPHeader("X-GitHub-Api-Version", "2022-11-28"),
        ], operation: .userinfo)
        let response: ProviderHTTPResponse
        do { response = try await http.send(request) } catch { throw .transport(error) }
        guard response.status == 200 else { throw .unexpectedStatus(response.status) }
        let hasNext = response.header("Link")?.contains("rel=\"next\"") ?? false
        do { return (try JSONValue.parse(response.body), hasNext) } catch {
            throw .malformed("GitHub \(ProviderHTTPRequest.withoutQuery(baseURL + path)): \(error)")
        }
    }

    /// The endpoints a provider without discovery has: the authorization and token endpoints under
    /// the web host; no keys, no UserInfo, no end session, no revocation (GitHub's grant deletion
    /// is not RFC 7009).
    public static func metadata(issuer: String) -> ProviderMetadata {
        var base = issuer
        while base.hasSuffix("/") { base.removeLast() }
        return ProviderMetadata(issuer: issuer, authorizationEndpoint: base + "/login/oauth/authorize",
                                tokenEndpoint: base + "/login/oauth/access_token", jwksURI: "",
                                codeChallengeMethodsSupported: ["S256"],
                                tokenEndpointAuthMethodsSupported: ["client_secret_post", "client_secret_basic"])
    }
}

extension IDTokenClaims {
    /// Claims a provider without ID tokens vouched for over TLS to its user API (GitHub): the same
    /// shape as an ID token's, for the session; there is no nonce, and the token is as old as now.
    public init(userAPIClaims claims: [String: JSONValue], issuer: String, clientID: String, now: Date) {
        self.init(issuer: issuer, sub: claims["sub"]?.stringValue ?? "", audiences: [clientID], sid: nil,
                  exp: now, iat: now, nonce: nil, all: claims)
    }
}
