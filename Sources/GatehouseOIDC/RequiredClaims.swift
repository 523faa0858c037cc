/// `GATEHOUSE_REQUIRE_CLAIMS`: claims the ID token must carry with a given value (`hd=example.com`,
/// `email_verified=true`, `org_id=org_1`, `tid=…`). Providers that sign in anyone with an account
/// (Google, multi-tenant Entra ID, Auth0 organizations) leave it to the client to restrict who may
/// enter; an unchecked `hd` or `tid` lets every Gmail or Entra user in.
///
/// For example: `RequiredClaims([("hd", "example.com")]).firstMismatch(in: claims)`.
public struct RequiredClaims: Sendable, Equatable {
    public struct Requirement: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    public let requirements: [Requirement]

    public init(_ pairs: [(String, String)]) {
        requirements = pairs.map { Requirement(name: $0.0, value: $0.1) }
    }

    /// Why the claims do not satisfy the requirements (names the claim, never echoes a value of the
    /// token into the message beyond its JSON type), or nil when they do. A string claim compares
    /// as text, a boolean as `true`/`false`, a number as its decimal text, an array when one of its
    /// elements matches (Okta `groups`, Auth0 roles).
    public func firstMismatch(in claims: [String: JSONValue]) -> String? {
        for requirement in requirements {
            guard let value = claims[requirement.name], value != .null else {
                return "the ID token has no \(requirement.name) claim (GATEHOUSE_REQUIRE_CLAIMS)"
            }
            guard Self.matches(value, requirement.value) else {
                return "the ID token's \(requirement.name) claim is not the required value (GATEHOUSE_REQUIRE_CLAIMS)"
            }
        }
        return nil
    }

    static func matches(_ value: JSONValue, _ expected: String) -> Bool {
        switch value {
        case .string(let text): return text == expected
        case .bool(let flag): return (flag ? "true" : "false") == expected
        case .number(let number):
            if number.rounded() == number, abs(number) < 1e15 { return String(Int64(number)) == expected }
            return String(number) == expected
        case .array(let elements): return elements.contains { matches($0, expected) }
        case .null, .object: return false
        }
    }
}
