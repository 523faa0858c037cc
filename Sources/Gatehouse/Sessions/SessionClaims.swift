import GatehouseCore
import GatehouseOIDC

/// A session's claims as `allow=` rules and login gates read them (SPEC "Who may call what"): the
/// ID token merged with UserInfo, the provider's name, and its groups from where that provider puts
/// them. Pure: made from the stored claims JSON.
struct SessionClaims: ClaimReading, Sendable {
    private let claims: [String: JSONValue]
    private let provider: String
    private let groups: [String]
    private let verifiedEmail: String?

    init(claimsJSON: [UInt8], provider: String, groupsClaim: String) {
        self.init(claims: (try? JSONValue.parse(claimsJSON))?.objectValue ?? [:], provider: provider, groupsClaim: groupsClaim)
    }

    init(claims: [String: JSONValue], provider: String, groupsClaim: String) {
        self.claims = claims
        self.provider = provider
        groups = GroupsClaim.names(in: claims, at: groupsClaim)
        let verified: Bool
        switch claims["email_verified"] {
        case .bool(let flag)?: verified = flag
        case .string(let text)?: verified = text == "true"  // Apple, and others, send a string.
        default: verified = false
        }
        verifiedEmail = verified ? claims["email"]?.stringValue : nil
    }

    func values(of claim: AccessRule.Claim) -> [String] {
        switch claim {
        case .groups: return groups
        case .email: return verifiedEmail.map { [$0] } ?? []
        case .emailDomain:
            // The part after the last @: `a@evil.example.com` is at `evil.example.com`, never `example.com`.
            guard let email = verifiedEmail, let at = email.lastIndex(of: "@") else { return [] }
            let domain = email[email.index(after: at)...]
            return domain.isEmpty ? [] : [String(domain)]
        case .sub: return claims["sub"]?.stringValue.map { [$0] } ?? []
        case .provider: return [provider]
        case .other(let name): return claims[name].map(Self.texts) ?? []
        }
    }

    /// A claim's values as rules compare them: strings as they are, numbers and booleans as their
    /// JSON text (`42`, `true`), arrays as their strings; objects hold none.
    private static func texts(_ value: JSONValue) -> [String] {
        switch value {
        case .string(let text): return [text]
        case .bool(let flag): return [flag ? "true" : "false"]
        case .number(let number):
            if number == number.rounded(), abs(number) < 1e15 { return [String(Int64(number))] }
            return [String(number)]
        case .array(let items): return items.compactMap(\.stringValue)
        default: return []
        }
    }
}
