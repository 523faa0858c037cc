import FoundationEssentials
import GatehouseEncoding

/// Why the UserInfo answer was not used (OIDC Core §5.3). Descriptions never quote tokens.
public enum UserInfoError: Error, Sendable, Equatable, CustomStringConvertible {
    case transport(ProviderTransportError)
    /// Not `200` (RFC 6750 §3.1 errors come as `401`/`403` with `WWW-Authenticate`).
    case unexpectedStatus(Int)
    /// `application/jwt` without a key set to verify it, or an encrypted (JWE) response.
    case signedResponseUnsupported
    /// A signed response whose signature or algorithm does not verify against the provider's JWKS.
    case signature(JWSVerificationError)
    /// §5.3.2: a signed response's `iss` must be the issuer and its `aud` must include the client id.
    case signedClaimMismatch(String)
    case malformed(String)
    /// §5.3.2: "The sub Claim in the UserInfo Response MUST be verified to exactly match the sub
    /// Claim in the ID Token; if they do not match, the UserInfo Response values MUST NOT be used."
    case subjectMismatch

    public var description: String {
        switch self {
        case .transport(let error): "UserInfo: \(error)"
        case .unexpectedStatus(let status): "UserInfo answered HTTP \(status)"
        case .signedResponseUnsupported:
            "UserInfo answered an encrypted or unverifiable application/jwt, which Gatehouse does not accept; register the client for JSON or signed (not encrypted) UserInfo, or set GATEHOUSE_USERINFO=false"
        case .signature(let error): "signed UserInfo: \(error)"
        case .signedClaimMismatch(let reason): "signed UserInfo: \(reason)"
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
    /// What verifies a signed (`application/jwt`) answer: the provider's keys (algorithms pinned as
    /// for ID tokens), its issuer and the client id (§5.3.2).
    public struct SignedResponses: Sendable {
        public let keySet: KeySet
        public let issuer: String
        public let clientID: String

        public init(keySet: KeySet, issuer: String, clientID: String) {
            self.keySet = keySet
            self.issuer = issuer
            self.clientID = clientID
        }
    }

    public let endpoint: String
    private let http: any ProviderHTTPClient
    private let signed: SignedResponses?
    /// Opens an encrypted answer (`GATEHOUSE_CLIENT_ENCRYPTION_KEY`): signed then encrypted, or
    /// encrypted JSON (OIDC Core §5.3.2).
    public var decrypter: JWEDecrypter?
    /// Told why an aggregated or distributed claims source added nothing (for the log).
    public var onSkippedClaimsSource: (@Sendable (String) -> Void)?

    /// - Parameter signed: nil refuses signed answers.
    public init(endpoint: String, http: any ProviderHTTPClient, signed: SignedResponses? = nil) {
        self.endpoint = endpoint
        self.http = http
        self.signed = signed
    }

    /// The UserInfo claims, once their `sub` equals `expectedSubject`.
    /// - Throws: ``UserInfoError``.
    /// - Parameter dpop: the session's DPoP key when the token is bound to it (`Authorization: DPoP`
    ///   with a proof carrying `ath`; RFC 9449 §7), and the provider's nonces.
    public func fetch(accessToken: String, expectedSubject: String,
                      dpop: (key: DPoPKey, nonces: DPoPNonces)? = nil) async throws(UserInfoError) -> [String: JSONValue] {
        var response: ProviderHTTPResponse
        var attempt = 0
        while true {
            var headers = [ProviderHTTPHeader("Authorization", (dpop == nil ? "Bearer " : "DPoP ") + accessToken),
                           ProviderHTTPHeader("Accept", "application/json, application/jwt")]
            if let dpop {
                headers.append(ProviderHTTPHeader("DPoP", dpop.key.proof(
                    method: "GET", url: endpoint, nonce: dpop.nonces.nonce(for: endpoint), accessToken: accessToken,
                    now: Int64(Date().timeIntervalSince1970))))
            }
            do {
                response = try await http.send(ProviderHTTPRequest(method: .get, url: endpoint, headers: headers, operation: .userinfo))
            } catch {
                throw .transport(error)
            }
            guard let dpop, let nonce = response.header("DPoP-Nonce") else { break }
            dpop.nonces.remember(nonce, for: endpoint)
            guard attempt == 0, DPoPKey.asksForNonce(status: response.status, body: nil,
                                                     wwwAuthenticate: response.header("WWW-Authenticate")) else { break }
            attempt += 1
        }
        guard response.status == 200 else { throw .unexpectedStatus(response.status) }
        let contentType = response.header("Content-Type") ?? ""
        let mediaType = contentType[..<(contentType.utf8.firstIndex(of: UInt8(ascii: ";")) ?? contentType.endIndex)]
            .trimmingWhitespace().lowercased()
        return try await withExternalClaims(try await answerClaims(response, mediaType: mediaType, expectedSubject: expectedSubject),
                                            accessToken: accessToken)
    }

    /// The answer's own claims, by its media type.
    private func answerClaims(_ response: ProviderHTTPResponse, mediaType: String,
                              expectedSubject: String) async throws(UserInfoError) -> [String: JSONValue] {
        if mediaType == "application/jwt" {
            let token = String(decoding: response.body, as: UTF8.self).trimmingWhitespaceAndNewlines()
            guard JWEDecrypter.isJWE(token) else { return try await signedClaims(response.body, expectedSubject: expectedSubject) }
            guard let decrypter else { throw .signedResponseUnsupported }
            let inner: [UInt8]
            do { inner = try decrypter.decrypt(token) } catch { throw .malformed("encrypted answer: \(error)") }
            if inner.first == UInt8(ascii: "{") { return try Self.claims(inner, expectedSubject: expectedSubject) }
            return try await signedClaims(inner, expectedSubject: expectedSubject)
        }
        return try Self.claims(response.body, expectedSubject: expectedSubject)
    }

    /// Aggregated and distributed claims resolved (§5.6.2), when the answer has any.
    private func withExternalClaims(_ claims: [String: JSONValue], accessToken: String) async throws(UserInfoError) -> [String: JSONValue] {
        guard claims["_claim_names"] != nil || claims["_claim_sources"] != nil else { return claims }
        let external = ExternalClaims(http: http, providerIssuer: signed?.issuer ?? "", providerKeys: signed?.keySet)
        let (resolved, skipped) = await external.resolved(claims)
        for reason in skipped { onSkippedClaimsSource?(reason) }
        return resolved
    }

    /// A signed answer (§5.3.2): signature against the provider's JWKS, `iss`, `aud`, then `sub`.
    ///
    /// §5.3.2 says a signed answer "MUST contain" `iss` and `aud`, but providers omit them (the
    /// OIDF test OP does); the answer comes straight from the endpoint, for our access token, so a
    /// missing claim is tolerated, while a present one must match.
    private func signedClaims(_ body: [UInt8], expectedSubject: String) async throws(UserInfoError) -> [String: JSONValue] {
        guard let signed else { throw .signedResponseUnsupported }
        let token = String(decoding: body, as: UTF8.self).trimmingWhitespaceAndNewlines()
        guard Array(token.utf8).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).count == 3 else {
            throw .signedResponseUnsupported
        }
        let verified: VerifiedJWS
        do { verified = try await signed.keySet.verify(token, from: .providerResponse) } catch { throw .signature(error) }
        let claims = verified.claims
        if let iss = claims["iss"], iss != .string(signed.issuer) {
            throw .signedClaimMismatch("iss is not the issuer \"\(signed.issuer)\"")
        }
        if let aud = claims["aud"] {
            let audiences: [String]
            switch aud {
            case .string(let single): audiences = [single]
            case .array(let many): audiences = many.compactMap(\.stringValue)
            default: audiences = []
            }
            guard audiences.contains(signed.clientID) else {
                throw .signedClaimMismatch("aud does not contain the client id \"\(signed.clientID)\"")
            }
        }
        guard case .string(let sub)? = claims["sub"] else { throw .malformed("sub is missing or not a string") }
        guard sub == expectedSubject else { throw .subjectMismatch }
        return claims
    }

    /// Decodes a JSON UserInfo body and checks `sub` (§5.3.2).
    static func claims(_ body: [UInt8], expectedSubject: String) throws(UserInfoError) -> [String: JSONValue] {
        guard let value = try? JSONValue.parse(body), let object = value.objectValue else {
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
