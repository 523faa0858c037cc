/// Where a provider puts the user's groups, read one way for access rules, login gates, identity
/// headers and the assertion (`GATEHOUSE_GROUPS_CLAIM`): a top-level claim of that name first
/// (Auth0's namespaced `https://example.com/roles`), else a dotted path (Keycloak's
/// `realm_access.roles`); an array of strings, or one string of names separated by spaces or commas.
public enum GroupsClaim {
    public static func names(in claims: [String: JSONValue], at name: String) -> [String] {
        if let value = claims[name] { return names(value) }
        var current: JSONValue = .object(claims)
        for step in name.split(separator: ".") {
            guard let next = current.objectValue?[String(step)] else { return [] }
            current = next
        }
        return names(current)
    }

    private static func names(_ value: JSONValue) -> [String] {
        switch value {
        case .array(let items): return items.compactMap(\.stringValue).filter { !$0.isEmpty }
        case .string(let text): return text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        default: return []
        }
    }
}
