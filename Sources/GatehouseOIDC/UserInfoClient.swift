import Foundation

/// Why the UserInfo answer was not used (OIDC Core §5.3). Descriptions never quote tokens.
public enum UserInfoError: Error, Sendable, Equatable, CustomStringConvertible {
    case transport(ProviderTransportError)
    /// Not `200` (RFC 6750 §3.1 errors come as `401`/`403` with `WWW-Authenticate`).
    case unexpectedStatus(Int)
    /// `application/jwt`: a signed (or encrypted) UserInfo response, which Gatehouse does not accept.
    case signedResponseUnsupported
    case malformed(String)
    /// §5.3.2: "The sub Claim in the UserInfo Response MUST be verified to exactly match the sub
    /// Claim in the ID Token; if they do not match, the UserInfo Response values MUST NOT be used."
    case subjectMismatch

    public var description: String {
        switch self {
        case .transport(let error): "UserInfo: \(error)"
        case .unexpectedStatus(let status): "UserInfo answered HTTP \(status)"
        case .signedResponseUnsupported:
            "UserInfo answered application/jwt (a signed response), which Gatehouse does not accept; register the client for JSON UserInfo or set GATEHOUSE_USERINFO=false"
        case .malformed(let reason): "UserInfo answer is not usable: \(reason)"
        case .subjectMismatch: "UserInfo sub differs from the ID token's sub"
        }
    }
}

/// Calls the provider's UserInfo endpoint with the access token in the `Authorization` header
/// (OIDC Core §5.3.1, RFC 6750 §2.1) and checks its `sub`.
///
/// For example: `let claims = try await userinfo.fetch(accessToken: token, expectedSubject: sub)`.
public struct UserInfoClient: Sendable {
    public let endpoint: String
    private let http: any ProviderHTTPClient

    public init(endpoint: String, http: any ProviderHTTPClient) {
        self.endpoint = endpoint
        self.http = http
    }

    /// The UserInfo claims, once their `sub` equals `expectedSubject`.
    /// - Throws: ``UserInfoError``.
    public func fetch(accessToken: String, expectedSubject: String) async throws(UserInfoError) -> [String: JSONValue] {
        let response: ProviderHTTPResponse
        do {
            response = try await http.send(ProviderHTTPRequest(
                method: .get, url: endpoint,
                headers: [ProviderHTTPHeader("Authorization", "Bearer " + accessToken),
                          ProviderHTTPHeader("Accept", "application/json")]))
        } catch {
            throw .transport(error)
        }
        guard response.status == 200 else { throw .unexpectedStatus(response.status) }
        let mediaType = (response.header("Content-Type") ?? "").split(separator: ";").first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        if mediaType == "application/jwt" { throw .signedResponseUnsupported }
        return try Self.claims(response.body, expectedSubject: expectedSubject)
    }

    /// Decodes a JSON UserInfo body and checks `sub` (§5.3.2).
    static func claims(_ body: [UInt8], expectedSubject: String) throws(UserInfoError) -> [String: JSONValue] {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body)), let object = value.objectValue else {
            throw .malformed("the body is not a JSON object")
        }
        guard case .string(let sub)? = object["sub"] else { throw .malformed("sub is missing or not a string") }
        guard sub == expectedSubject else { throw .subjectMismatch }
        return object
    }
}

/// How UserInfo claims join the ID token's for `/user`.
public enum UserInfoClaims {
    /// Claims that describe the token or the authentication, not the user: UserInfo never sets them.
    public static let protocolClaims: Set<String> = ["iss", "sub", "aud", "exp", "iat", "nbf", "nonce", "azp", "auth_time",
                                                     "acr", "amr", "at_hash", "c_hash", "sid", "jti", "typ", "cnf",
                                                     "events"]

    /// The ID token's claims with the UserInfo claims added: an ID-token claim is never replaced,
    /// and the protocol claims are never taken from UserInfo.
    public static func merge(idToken: [String: JSONValue], userinfo: [String: JSONValue]) -> [String: JSONValue] {
        var merged = idToken
        for (name, value) in userinfo where merged[name] == nil && !protocolClaims.contains(name) {
            merged[name] = value
        }
        return merged
    }
}
