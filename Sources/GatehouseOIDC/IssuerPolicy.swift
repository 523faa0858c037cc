import FoundationEssentials
/// How the `iss` of a token (and the discovery document's `issuer`) is matched against the
/// configured issuer. Exact equality is the rule (OIDC Core §3.1.3.7 step 2, Discovery §4.3); two
/// providers document exceptions, each allowed only by its profile (`GATEHOUSE_PROVIDER`).
public enum IssuerPolicy: String, Sendable, Equatable, CaseIterable {
    /// `iss` equals the issuer exactly.
    case exact
    /// Google: "the value of iss in the ID token is equal to https://accounts.google.com or
    /// accounts.google.com" (Google Identity, OpenID Connect, "Validating an ID token").
    case schemeOptional
    /// Microsoft Entra ID multi-tenant: the document's issuer is a template
    /// `https://login.microsoftonline.com/{tenantid}/v2.0`; a token's `iss` is that template with
    /// the token's own `tid` claim substituted (Microsoft identity platform, "Validate the issuer").
    case tenantTemplate

    /// The placeholder of Entra's multi-tenant issuer template.
    public static let tenantPlaceholder = "{tenantid}"

    /// Whether the discovery document's `issuer` fits `GATEHOUSE_ISSUER`. Under `tenantTemplate` the
    /// `common`, `organizations` or `consumers` document carries the template: it fits when the
    /// template with the configured issuer's segment in the placeholder's place equals it.
    public func acceptsDocumentIssuer(_ documentIssuer: String, configured: String) -> Bool {
        if documentIssuer == configured { return true }
        guard self == .tenantTemplate, let range = documentIssuer.firstRange(of: Self.tenantPlaceholder) else { return false }
        let prefix = documentIssuer[..<range.lowerBound], suffix = documentIssuer[range.upperBound...]
        guard configured.hasPrefix(prefix), configured.hasSuffix(suffix),
              configured.count > prefix.count + suffix.count else { return false }
        let segment = configured.dropFirst(prefix.count).dropLast(suffix.count)
        return !segment.contains("/")
    }

    /// The tenant segments of Entra's shared endpoints, whose document carries the template and
    /// whose tokens come from any tenant (a multi-tenant app by design).
    public static let sharedTenants: Set<String> = ["common", "organizations", "consumers"]

    /// The issuer tokens are checked against, given the discovery document's `issuer` and the
    /// configured one: the document's, except under `tenantTemplate` when the document carries the
    /// template but the configured issuer names one tenant (not a shared one): then that tenant's
    /// issuer, so that a token of any other tenant is refused.
    public func tokenIssuer(documentIssuer: String, configured: String) -> String {
        guard self == .tenantTemplate, documentIssuer.contains(Self.tenantPlaceholder),
              acceptsDocumentIssuer(documentIssuer, configured: configured),
              let segment = Self.tenantSegment(of: configured),
              !Self.sharedTenants.contains(segment.lowercased()) else { return documentIssuer }
        return configured
    }

    /// The first path segment of an issuer URL (Entra's tenant), or nil.
    static func tenantSegment(of issuer: String) -> Substring? {
        guard let schemeEnd = issuer.firstRange(of: "://") else { return nil }
        let afterHost = issuer[schemeEnd.upperBound...].drop { $0 != "/" }.dropFirst()
        let segment = afterHost.prefix { $0 != "/" }
        return segment.isEmpty ? nil : segment
    }

    /// Whether two accepted `iss` values name the same issuer (a refreshed ID token against the
    /// login's, OIDC Core §12.2): Google may use either form; Entra's must name the same tenant.
    public func sameIssuer(_ first: String, _ second: String) -> Bool {
        guard self == .schemeOptional else { return first == second }
        func bare(_ iss: String) -> Substring {
            for scheme in ["https://", "http://"] where iss.hasPrefix(scheme) { return iss.dropFirst(scheme.count) }
            return Substring(iss)
        }
        return bare(first) == bare(second)
    }

    /// Whether a token's `iss` is acceptable for the provider whose metadata issuer is `issuer`.
    /// `claims` supplies `tid` for the tenant template.
    public func acceptsTokenIssuer(_ iss: String, issuer: String, claims: [String: JSONValue]) -> Bool {
        switch self {
        case .exact:
            return iss == issuer
        case .schemeOptional:
            // The scheme is https (http only for a loopback test issuer, which the configuration allows).
            guard iss != issuer else { return true }
            guard let scheme = ["https://", "http://"].first(where: { issuer.hasPrefix($0) }) else { return false }
            return iss == String(issuer.dropFirst(scheme.count))
        case .tenantTemplate:
            guard issuer.contains(Self.tenantPlaceholder) else {
                // One tenant's issuer: the token's `tid`, when it has one, names that tenant too
                // (defence in depth beside the exact `iss`).
                guard iss == issuer else { return false }
                if case .string(let tid)? = claims["tid"], let segment = Self.tenantSegment(of: issuer),
                   segment.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || $0 == "-" }) {
                    return tid.lowercased() == segment.lowercased()
                }
                return true
            }
            // A tenant id is a GUID: anything with a `/` could move the issuer elsewhere.
            guard case .string(let tid)? = claims["tid"], !tid.isEmpty,
                  tid.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || $0 == "-" }) else { return false }
            return iss == issuer.replacing(Self.tenantPlaceholder, with: tid)
        }
    }
}
