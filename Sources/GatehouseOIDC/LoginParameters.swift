/// `GATEHOUSE_LOGIN_PARAMS`: query parameters of `/login` passed on to the authorization request
/// (Auth0 `organization` and `invitation`, `login_hint`, `screen_hint`, `prompt`, `ui_locales`).
/// Only the listed names pass; every other parameter of `/login` is ignored.
public enum LoginParameters {
    /// Longest value passed on; a provider parameter is a short identifier or hint.
    public static let maximumValueLength = 512

    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// The parameter was given twice: which one the provider would see is unclear.
        case repeated(String)
        /// Too long, or holding control characters.
        case unacceptableValue(String)

        public var description: String {
            switch self {
            case .repeated(let name): "\(name) is given more than once"
            case .unacceptableValue(let name): "\(name) is too long or holds control characters"
            }
        }
    }

    /// The allowed parameters present in `query`, in the order of `allowed`. A nil value stands for
    /// a malformed percent-encoding.
    public static func select(from query: [(String, String?)], allowed: [String]) throws(Problem) -> [(String, String)] {
        var selected: [(String, String)] = []
        for name in allowed {
            let values = query.filter { $0.0 == name }.map(\.1)
            guard let first = values.first else { continue }
            guard values.count == 1 else { throw .repeated(name) }
            guard let value = first, value.utf8.count <= maximumValueLength,
                  !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw .unacceptableValue(name)
            }
            selected.append((name, value))
        }
        return selected
    }

    /// The names a `/login` may always pass, listed or not, with the one value each may take:
    /// `prompt=none`, the SPA's silent sign-in (OIDC Core §3.1.2.1; SPEC "Silent login"). Another
    /// `prompt` value passes only when `GATEHOUSE_LOGIN_PARAMS` lists `prompt`.
    public static let alwaysAllowed: [(name: String, value: String)] = [("prompt", "none")]

    /// `select(from:allowed:)`, plus the `alwaysAllowed` pairs present in `query` with their one value.
    public static func selectAllowingSilent(from query: [(String, String?)],
                                            allowed: [String]) throws(Problem) -> [(String, String)] {
        var selected = try select(from: query, allowed: allowed)
        for (name, value) in alwaysAllowed where !allowed.contains(name) {
            let values = query.filter { $0.0 == name }.map(\.1)
            guard !values.isEmpty else { continue }
            guard values.count == 1 else { throw .repeated(name) }
            if values[0] == value { selected.append((name, value)) }
        }
        return selected
    }

    /// `GATEHOUSE_AUTH_PARAMS` with the per-login values in place of configured ones of the same
    /// name (a login's `prompt=login` replaces a configured `prompt=consent`).
    public static func merged(configured: [(String, String)], login: [(String, String)]) -> [(String, String)] {
        let names = Set(login.map(\.0))
        return configured.filter { !names.contains($0.0) } + login
    }
}
