import FoundationEssentials

/// A successful token response (RFC 6749 §5.1, OIDC Core §3.1.3.3), decoded strictly:
/// `access_token` must be a non-empty string and `token_type` must be `Bearer` (any case).
/// Its description is redacted.
public struct TokenResponse: Sendable, Equatable, CustomStringConvertible {
    public var accessToken: String
    public var tokenType: String
    /// Seconds until the access token expires, when the provider says.
    public var expiresIn: Int?
    public var refreshToken: String?
    public var idToken: String?
    public var scope: String?
    /// RFC 8693 §2.2.1 `issued_token_type` (token exchange answers only).
    public var issuedTokenType: String?

    public init(accessToken: String, tokenType: String = "Bearer", expiresIn: Int? = nil, refreshToken: String? = nil,
                idToken: String? = nil, scope: String? = nil, issuedTokenType: String? = nil) {
        self.issuedTokenType = issuedTokenType
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.scope = scope
    }

    public var description: String {
        "TokenResponse(expiresIn: \(expiresIn.map(String.init) ?? "nil"), refreshToken: \(refreshToken == nil ? "no" : "yes"), idToken: \(idToken == nil ? "no" : "yes"))"
    }

    /// Decodes a token response body.
    ///
    /// - Throws: ``TokenEndpointError/invalidResponse(_:)`` naming the field; never quoting token values.
    public static func decode(_ body: [UInt8]) throws(TokenEndpointError) -> TokenResponse {
        guard let value = try? JSONValue.parse(body), let object = value.objectValue else {
            throw .invalidResponse("the body is not a JSON object")
        }
        guard let accessToken = object["access_token"]?.stringValue, !accessToken.isEmpty else {
            throw .invalidResponse("access_token is missing, empty or not a string")
        }
        guard let tokenType = object["token_type"]?.stringValue else {
            throw .invalidResponse("token_type is missing or not a string")
        }
        // RFC 9449 §5: `DPoP` for a token bound to the request's DPoP key.
        guard tokenType.lowercased() == "bearer" || tokenType.lowercased() == "dpop" else {
            throw .invalidResponse("token_type \"\(tokenType.prefix(40))\" is not Bearer or DPoP")
        }
        return TokenResponse(accessToken: accessToken, tokenType: tokenType,
                             expiresIn: try expiresIn(object["expires_in"]),
                             refreshToken: try optionalString(object, "refresh_token"),
                             idToken: try optionalString(object, "id_token"),
                             scope: try optionalString(object, "scope"),
                             issuedTokenType: try optionalString(object, "issued_token_type"))
    }

    private static func optionalString(_ object: [String: JSONValue], _ name: String) throws(TokenEndpointError) -> String? {
        switch object[name] {
        case nil, .null?: return nil
        case .string(let value)?: return value.isEmpty ? nil : value
        default: throw .invalidResponse("\(name) is not a string")
        }
    }

    /// A non-negative integer; some providers send it as a numeric string, which is accepted.
    private static func expiresIn(_ value: JSONValue?) throws(TokenEndpointError) -> Int? {
        let seconds: Double
        switch value {
        case nil, .null?: return nil
        case .number(let number)?: seconds = number
        case .string(let text)?:
            guard let number = Double(text) else { throw .invalidResponse("expires_in is not a number") }
            seconds = number
        default: throw .invalidResponse("expires_in is not a number")
        }
        guard seconds.isFinite, seconds >= 0, seconds < 1e9 else { throw .invalidResponse("expires_in is out of range") }
        return Int(seconds)
    }
}
