/// Who may sign in at a provider at all (SPEC "Who may call what", login gates): every gate that
/// is set must be met, the email gates by a verified email, the groups gate by any listed group.
/// So "Sign in with Google" can mean "our company's Google accounts".
public struct LoginGate: Sendable, Equatable {
    /// `ALLOWED_EMAIL_DOMAINS`: lowercase, exact (no subdomains).
    public var emailDomains: [String]?
    /// `ALLOWED_EMAILS`: lowercase.
    public var emails: [String]?
    /// `ALLOWED_GROUPS`: exact.
    public var groups: [String]?

    public init(emailDomains: [String]? = nil, emails: [String]? = nil, groups: [String]? = nil) {
        self.emailDomains = emailDomains?.map { $0.lowercased() }
        self.emails = emails?.map { $0.lowercased() }
        self.groups = groups
    }

    public var isOpen: Bool { emailDomains == nil && emails == nil && groups == nil }

    /// nil when `claims` passes every gate that is set, else which gate refused (for the log;
    /// never the user's address).
    public func refusal(_ claims: some ClaimReading) -> String? {
        if let emailDomains, !claims.values(of: .emailDomain).contains(where: { emailDomains.contains($0.lowercased()) }) {
            return "email domain not in the allowed email domains (or not verified)"
        }
        if let emails, !claims.values(of: .email).contains(where: { emails.contains($0.lowercased()) }) {
            return "email not in the allowed emails (or not verified)"
        }
        if let groups, !claims.values(of: .groups).contains(where: groups.contains) {
            return "no allowed group"
        }
        return nil
    }
}

extension EnvironmentReader {
    /// `ALLOWED_EMAIL_DOMAINS`, `ALLOWED_EMAILS`, `ALLOWED_GROUPS` (comma-separated; unset: no gate).
    mutating func loginGate() -> LoginGate {
        func list(_ name: String, check: (String) -> String?) -> [String]? {
            guard value(name) != nil else { return nil }
            let entries = listEntries(name)
            if entries.isEmpty { fail(name, "lists nothing (unset it to let everyone sign in)") }
            for entry in entries {
                if let problem = check(entry) { fail(name, "\(ConfigurationIssue.quote(entry)) \(problem)") }
            }
            return entries
        }
        let domains = list("GATEHOUSE_ALLOWED_EMAIL_DOMAINS") { entry in
            entry.contains("@") || entry.contains(" ") || entry.hasPrefix(".") ? "is not a domain (example.com)" : nil
        }
        let emails = list("GATEHOUSE_ALLOWED_EMAILS") { entry in
            entry.split(separator: "@").count == 2 && !entry.contains(" ") ? nil : "is not an email address"
        }
        let groups = list("GATEHOUSE_ALLOWED_GROUPS") { _ in nil }
        return LoginGate(emailDomains: domains, emails: emails, groups: groups)
    }

    /// `GROUPS_CLAIM`: a top-level claim name (Auth0's `https://example.com/roles`) or a dotted path
    /// (Keycloak's `realm_access.roles`); `groups` when unset.
    mutating func groupsClaim() -> String {
        let name = "GATEHOUSE_GROUPS_CLAIM"
        guard let text = value(name) else { return "groups" }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), !text.hasPrefix("."), !text.hasSuffix("."),
              !text.contains("..") else {
            fail(name, "\(ConfigurationIssue.quote(text)) is not a claim name or dotted path (visible ASCII, no spaces)")
            return "groups"
        }
        return text
    }
}
