/// What Sign in with Apple says about the user besides a standard ID token ("Authenticating users
/// with Sign in with Apple", "Retrieve the user's information from Apple ID servers"):
/// - the user's name arrives once, on the first authorization, as the `user` field of the form
///   post (`{"name":{"firstName":…,"lastName":…},"email":…}`), never in the ID token;
/// - `email_verified` and `is_private_email` are strings (`"true"`), not booleans;
/// - a private relay address (`…@privaterelay.appleid.com`) forwards to the user's real one.
public enum AppleIdentity {
    /// The `user` field is read only up to this size; larger, it is ignored.
    public static let maximumUserFieldBytes = 4096
    static let relayDomain = "privaterelay.appleid.com"

    /// `claims` with Apple's string booleans as booleans, `is_private_email` set for a relay
    /// address whatever Apple said, and the name of the first authorization's `user` field when
    /// the token carries none.
    public static func sessionClaims(_ claims: [String: JSONValue], userField: String?) -> [String: JSONValue] {
        var claims = claims
        for name in ["email_verified", "is_private_email"] {
            if case .string(let text)? = claims[name] {
                if text == "true" || text == "false" { claims[name] = .bool(text == "true") } else { claims[name] = nil }
            }
        }
        if let email = claims["email"]?.stringValue, email.lowercased().hasSuffix("@" + relayDomain) {
            claims["is_private_email"] = .bool(true)
        }
        if claims["name"] == nil, let userField, let name = Self.name(userField: userField) {
            claims["name"] = .string(name.full)
            if let given = name.given { claims["given_name"] = .string(given) }
            if let family = name.family { claims["family_name"] = .string(family) }
        }
        return claims
    }

    /// A refreshed ID token's claims read as at login, with the name the session had kept.
    public static func refreshedClaims(_ claims: [String: JSONValue], stored: [String: JSONValue]) -> [String: JSONValue] {
        var claims = sessionClaims(claims, userField: nil)
        if claims["name"] == nil {
            for key in ["name", "given_name", "family_name"] { claims[key] = stored[key] }
        }
        return claims
    }

    /// The name in a `user` field: nil unless it is a JSON object, within the size bound, whose
    /// `name` holds printable strings of at most 200 characters.
    static func name(userField: String) -> (full: String, given: String?, family: String?)? {
        guard userField.utf8.count <= maximumUserFieldBytes,
              let object = try? JSONValue.parse(Array(userField.utf8)).objectValue,
              let name = object["name"]?.objectValue else { return nil }
        func part(_ key: String) -> String?? {
            guard let value = name[key] else { return .some(nil) }
            guard let text = value.stringValue, text.count <= 200,
                  !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return nil }
            let trimmed = String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
            return .some(trimmed.isEmpty ? nil : trimmed)
        }
        guard let given = part("firstName"), let family = part("lastName") else { return nil }
        let full = [given, family].compactMap { $0 }.joined(separator: " ")
        return full.isEmpty ? nil : (full, given, family)
    }
}
