/// How the user authenticated, as the ID token says (OIDC Core §2): `acr` and `auth_time`, what a
/// step-up compares (the callback with the new ID token, the proxy with the session's claims).
public struct AuthenticationClaims: Sendable, Equatable {
    public let acr: String?
    /// Unix seconds.
    public let authTime: Int64?

    public init(_ claims: [String: JSONValue]) {
        if case .string(let value)? = claims["acr"] { acr = value } else { acr = nil }
        if case .number(let value)? = claims["auth_time"], value.isFinite, abs(value) < 1e11 {
            authTime = Int64(value)
        } else {
            authTime = nil
        }
    }

    /// From the claims JSON a session keeps; nothing when it is not an object.
    public init(json: [UInt8]) {
        if case .object(let claims)? = try? JSONValue.parse(json) { self.init(claims) } else { self.init([:]) }
    }
}
