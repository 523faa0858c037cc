import FoundationEssentials
import GatehouseEncoding

/// The authorization request as a request object (RFC 9101 "JWT-Secured Authorization Request";
/// OIDC Core §6.1): every parameter a claim of a JWT signed with the client key, so the browser
/// carries nothing it could change unseen, and the provider knows the request is the client's.
public enum RequestObject {
    /// RFC 9101 §10.8: the explicit type, so the object cannot be mistaken for another JWT.
    public static let type = "oauth-authz-req+jwt"
    /// Long enough for a slow sign-in page to load, short enough not to be kept around.
    static let lifetime: Double = 300

    /// The signed object: the parameters as claims (`max_age` a number, `claims` an object), with
    /// `iss` the client, `aud` the provider's issuer, `iat`, `nbf`, `exp` and a `jti`.
    public static func signed(_ parameters: [(String, String)], clientID: String, audience: String,
                              key: ClientSigningKey, now: Date) async throws(TokenEndpointError) -> String {
        var claims: [String: JSONValue] = [:]
        for (name, value) in parameters {
            switch name {
            case "max_age": claims[name] = Double(value).map(JSONValue.number) ?? .string(value)
            case "claims": claims[name] = (try? JSONValue.parse(Array(value.utf8))) ?? .string(value)
            default: claims[name] = .string(value)
            }
        }
        let issuedAt = Double(Int(now.timeIntervalSince1970))
        claims["iss"] = .string(clientID)
        claims["aud"] = .string(audience)
        claims["iat"] = .number(issuedAt)
        claims["nbf"] = .number(issuedAt)
        claims["exp"] = .number(issuedAt + lifetime)
        claims["jti"] = .string(RandomToken.make())
        return try await key.sign(RawClaims(claims: claims), type: type)
    }

    /// `signed` encrypted to the provider (a nested JWT, `cty` `JWT`): the key management Gatehouse
    /// prefers among those the provider lists, to one of the keys its `jwks_uri` publishes now.
    public static func encrypted(_ signed: String, metadata: ProviderMetadata,
                                 keys: ProviderEncryptionKeySource) async throws(RequestObjectEncryptionError) -> String {
        let published: [ProviderEncryptionKey]
        do { published = try await keys.current() } catch { throw .keys(error) }
        guard let choice = JWEEncryptionChoice.choose(algorithms: metadata.requestObjectEncryptionAlgValuesSupported,
                                                      contents: metadata.requestObjectEncryptionEncValuesSupported,
                                                      keys: published) else {
            throw .noFittingKey(algorithms: metadata.requestObjectEncryptionAlgValuesSupported ?? [],
                                contents: metadata.requestObjectEncryptionEncValuesSupported ?? [], keys: published.count)
        }
        do { return try JWEEncrypter.encrypt(Array(signed.utf8), with: choice) } catch { throw .encryption(error) }
    }

    /// What travels beside a request object passed by reference (RFC 9101 §5.2, OIDC Core §6.2):
    /// `request_uri` where the provider fetches it, with the same parameters repeated as by value.
    public static func referenceParameters(_ parameters: [(String, String)], requestURI: String) -> [(String, String)] {
        repeated(parameters) + [("request_uri", requestURI)]
    }

    /// What travels beside the object, in the browser's URL or the pushed request: `client_id` and
    /// `request` (RFC 9101 §5), with `response_type` and `scope` repeated as OIDC Core §6.1 asks,
    /// and `redirect_uri` for the providers that read it before the object.
    public static func outerParameters(_ parameters: [(String, String)], requestObject: String) -> [(String, String)] {
        repeated(parameters) + [("request", requestObject)]
    }

    /// The parameters repeated beside the object, by value or by reference.
    private static func repeated(_ parameters: [(String, String)]) -> [(String, String)] {
        let names: Set<String> = ["client_id", "response_type", "scope", "redirect_uri"]
        return parameters.filter { names.contains($0.0) }
    }
}

/// Why a request object could not be encrypted to the provider: logged, and the login refused.
public enum RequestObjectEncryptionError: Error, Sendable, CustomStringConvertible {
    /// The provider's `jwks_uri` could not be read.
    case keys(KeySetError)
    /// None of the keys it publishes fits a key management it lists that Gatehouse uses.
    case noFittingKey(algorithms: [String], contents: [String], keys: Int)
    case encryption(JWEError)

    public var description: String {
        switch self {
        case .keys(let error): "the provider's encryption keys could not be read: \(error)"
        case .noFittingKey(let algorithms, let contents, let keys):
            "none of the \(keys) encryption keys in the provider's jwks_uri fits its request_object_encryption_alg_values_supported [\(algorithms.joined(separator: ", "))] with enc [\(contents.joined(separator: ", "))] and Gatehouse's RSA-OAEP-256, RSA-OAEP, ECDH-ES(+A256KW, +A128KW), A256GCM, A128CBC-HS256, A256CBC-HS512"
        case .encryption(let error): "\(error)"
        }
    }
}

/// `GATEHOUSE_CLAIMS_REQUEST`: the `claims` parameter (OIDC Core §5.5), checked at start.
public enum ClaimsRequest {
    /// The compact JSON to send, or why `text` cannot be one: an object whose members are
    /// `userinfo` and/or `id_token`, each an object of claim names to `null` or an object of
    /// `essential` (a boolean), `value` or `values` (an array).
    public static func validated(_ text: String) -> Result<String, ClaimsRequestError> {
        guard let value = try? JSONValue.parse(Array(text.utf8)), let object = value.objectValue, !object.isEmpty else {
            return .failure(ClaimsRequestError("is not a JSON object"))
        }
        for (member, requests) in object {
            guard member == "userinfo" || member == "id_token" else {
                return .failure(ClaimsRequestError("has \"\(member)\", where only userinfo and id_token are members"))
            }
            guard let requests = requests.objectValue else { return .failure(ClaimsRequestError("\(member) is not an object")) }
            for (claim, request) in requests {
                if request == .null { continue }
                guard let request = request.objectValue else {
                    return .failure(ClaimsRequestError("\(member).\(claim) is neither null nor an object"))
                }
                if let essential = request["essential"], essential.boolValue == nil {
                    return .failure(ClaimsRequestError("\(member).\(claim).essential is not a boolean"))
                }
                if let values = request["values"], values.arrayValue == nil {
                    return .failure(ClaimsRequestError("\(member).\(claim).values is not an array"))
                }
            }
        }
        guard let compact = JSONValueWriter.sortedKeys(object).map({ String(decoding: $0, as: UTF8.self) }) else {
            return .failure(ClaimsRequestError("cannot be written back as JSON"))
        }
        return .success(compact)
    }
}

public struct ClaimsRequestError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
