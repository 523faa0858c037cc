import Synchronization

/// Who may call a route: the `allow=` option (SPEC "Who may call what"). Terms `CLAIM:VALUE|VALUE`
/// joined by `+`; every term must hold, and a term holds when the session's claim has any of its
/// values. `email` and `email_domain` compare without case and hold only for a verified email
/// (the reader gives no values otherwise); every other claim compares exactly.
///
/// For example: `groups:admin|ops+email_domain:example.com`.
public struct AccessRule: Sendable, Hashable, CustomStringConvertible {
    public enum Claim: Sendable, Hashable, CustomStringConvertible {
        case groups, email, emailDomain, sub, provider
        /// Any other top-level claim of the session (ID token merged with UserInfo).
        case other(String)

        init(_ name: String) {
            switch name {
            case "groups": self = .groups
            case "email": self = .email
            case "email_domain": self = .emailDomain
            case "sub": self = .sub
            case "provider": self = .provider
            default: self = .other(name)
            }
        }

        public var description: String {
            switch self {
            case .groups: "groups"
            case .email: "email"
            case .emailDomain: "email_domain"
            case .sub: "sub"
            case .provider: "provider"
            case .other(let name): name
            }
        }

        /// Compared without ASCII case (RFC 5321 §2.4 leaves the local part to the host, but every
        /// provider treats addresses case-insensitively; DNS names are).
        var foldsCase: Bool { self == .email || self == .emailDomain }
    }

    public struct Term: Sendable, Hashable {
        public let claim: Claim
        public let values: [String]
    }

    /// Rules any one of which admits (a route's repeated `allow=` options, the file's list of
    /// rules): each alternative is terms that must all hold.
    public let alternatives: [[Term]]
    /// Tells parsed rules apart in a session's memo of its verdicts (copies keep it).
    public let id: Int

    private static let nextID = Atomic<Int>(1)

    public init(terms: [Term]) {
        self.init(alternatives: [terms])
    }

    public init(alternatives: [[Term]]) {
        self.alternatives = alternatives
        id = Self.nextID.add(1, ordering: .relaxed).oldValue
    }

    /// Every term of every alternative (a single rule's terms).
    public var terms: [Term] { alternatives.flatMap { $0 } }

    /// This rule or `other`: a session admitted by either is admitted.
    public func or(_ other: AccessRule) -> AccessRule {
        AccessRule(alternatives: alternatives + other.alternatives)
    }

    public static func == (a: AccessRule, b: AccessRule) -> Bool { a.alternatives == b.alternatives }
    public func hash(into hasher: inout Hasher) { hasher.combine(alternatives) }

    /// The rule as written; alternatives as the route options that gave them (`a;allow=b`).
    public var description: String {
        alternatives.map { terms in terms.map { "\($0.claim):\($0.values.joined(separator: "|"))" }.joined(separator: "+") }
            .joined(separator: ";allow=")
    }

    /// The provider names the rule's `provider:` terms mention (checked against the configuration).
    public var providerNames: [String] { terms.filter { $0.claim == .provider }.flatMap(\.values) }

    /// Whether the session `claims` describes satisfies every term of one of the alternatives.
    public func isSatisfied(by claims: some ClaimReading) -> Bool {
        alternatives.contains { terms in
            terms.allSatisfy { term in
                let held = claims.values(of: term.claim)
                guard !held.isEmpty else { return false }
                if term.claim.foldsCase {
                    return term.values.contains { wanted in held.contains { $0.lowercased() == wanted.lowercased() } }
                }
                return term.values.contains { held.contains($0) }
            }
        }
    }

    /// Why a rule's text was refused.
    public enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        case emptyTerm
        case malformedTerm(String)
        case invalidClaim(String)
        case emptyValue(String)

        public var description: String {
            switch self {
            case .emptyTerm: "has an empty term (a + at either end, or ++)"
            case .malformedTerm(let term): "has the term \(ConfigurationIssue.quote(term)), which is not CLAIM:VALUE|VALUE"
            case .invalidClaim(let claim): "names the claim \(ConfigurationIssue.quote(claim)), which is not a claim name (visible ASCII, no spaces)"
            case .emptyValue(let term): "has an empty value in \(ConfigurationIssue.quote(term)) (a | at either end, or ||)"
            }
        }
    }

    /// Parses `groups:admin|ops+email_domain:example.com`. A claim name may be a URL (Auth0's
    /// namespaced `https://example.com/roles:admin`): the claim ends at the first `:` not followed by
    /// `//`.
    public static func parse(_ text: some StringProtocol) throws(ParseError) -> AccessRule {
        var terms: [Term] = []
        for rawTerm in text.split(separator: "+", omittingEmptySubsequences: false) {
            let term = rawTerm.trimmingConfigurationWhitespace()
            guard !term.isEmpty else { throw .emptyTerm }
            guard let colon = claimEnd(in: term) else { throw .malformedTerm(String(term)) }
            let claim = String(term[..<colon])
            guard !claim.isEmpty, claim.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw .invalidClaim(claim) }
            let values = term[term.index(after: colon)...].split(separator: "|", omittingEmptySubsequences: false)
            guard values.allSatisfy({ !$0.isEmpty }) else { throw .emptyValue(String(term)) }
            terms.append(Term(claim: Claim(claim), values: values.map(String.init)))
        }
        return AccessRule(terms: terms)
    }

    private static func claimEnd(in term: Substring) -> Substring.Index? {
        var index = term.startIndex
        while let colon = term[index...].firstIndex(of: ":") {
            let after = term.index(after: colon)
            if term[after...].hasPrefix("//") {
                index = after
                continue
            }
            return colon
        }
        return nil
    }
}

/// The values a session holds for each claim a rule can name (strings; numbers and booleans as
/// their JSON text). `email` and `email_domain` have none unless the email is verified.
public protocol ClaimReading {
    func values(of claim: AccessRule.Claim) -> [String]
}
