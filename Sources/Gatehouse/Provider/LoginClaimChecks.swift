import GatehouseCore

/// Claims a login must come back with because of how it was started: a parameter asked the provider
/// for something its answer must show it did.
enum LoginClaimChecks {
    /// Auth0: a login started with `organization` must return a token of that organization, `org_id`
    /// for an organization id (`org_…`) and `org_name` for its name ("Work with Tokens and
    /// Organizations": validate the claim, or a user could sign in to another organization through
    /// the same client).
    static func required(by loginParameters: [(String, String)], profile: ProviderProfile) -> [String: String] {
        guard profile.name == .auth0, let organization = loginParameters.first(where: { $0.0 == "organization" })?.1 else {
            return [:]
        }
        return organization.hasPrefix("org_") ? ["org_id": organization] : ["org_name": organization.lowercased()]
    }
}
