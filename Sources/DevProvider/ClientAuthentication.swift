import FoundationEssentials
import GatehouseEncoding
import HTTP1

/// Client authentication at the token and revocation endpoints (RFC 6749 §2.3.1, OpenID Connect
/// Core §9): `client_secret_basic`, `client_secret_post`, or `none` for public clients.
enum ClientAuthentication {
    /// The registered client that made the request.
    ///
    /// - Throws: `invalid_client` for an unknown client, a missing or wrong secret, or a public
    ///   client presenting a secret; `invalid_request` when two methods are used at once (RFC 6749
    ///   §2.3: "The client MUST NOT use more than one authentication method in each request").
    static func authenticate(headers: HTTPHeaders, parameters: FormParameters,
                             clients: [String: DevClient]) throws(OAuthError) -> DevClient {
        let presented = try presentedCredentials(headers: headers, parameters: parameters)
        guard let client = clients[presented.clientID] else {
            throw OAuthError(.invalidClient, "unknown client")
        }
        switch (client.secret, presented.secret) {
        case (let expected?, let given?):
            guard constantTimeEquals(expected, given) else {
                throw OAuthError(.invalidClient, "client authentication failed")
            }
        case (.some, nil):
            throw OAuthError(.invalidClient, "this client has a secret and must authenticate")
        case (nil, .some):
            throw OAuthError(.invalidClient, "this public client has no secret")
        case (nil, nil):
            break
        }
        return client
    }

    private struct Credentials {
        var clientID: String
        var secret: String?
    }

    private static func presentedCredentials(headers: HTTPHeaders,
                                             parameters: FormParameters) throws(OAuthError) -> Credentials {
        let bodyID = parameters["client_id"]
        let bodySecret = parameters["client_secret"]
        guard let authorization = headers["Authorization"] else {
            guard let bodyID else { throw OAuthError(.invalidClient, "no client authentication and no client_id") }
            return Credentials(clientID: bodyID, secret: bodySecret)
        }
        if bodySecret != nil {
            throw OAuthError(.invalidRequest, "client authenticated with both the Authorization header and client_secret")
        }
        let basic = try decodeBasic(authorization)
        // A client_id in the body is allowed alongside Basic, but it must name the same client.
        if let bodyID, bodyID != basic.clientID {
            throw OAuthError(.invalidClient, "client_id does not match the authenticated client")
        }
        return basic
    }

    /// RFC 6749 §2.3.1: the id and secret are form-urlencoded, then joined with `:` and base64
    /// encoded as in RFC 7617.
    private static func decodeBasic(_ header: String) throws(OAuthError) -> Credentials {
        let parts = header.trimmingASCIIWhitespace().split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].asciiCaseInsensitiveEquals("Basic"),
              let data = Data(base64Encoded: String(parts[1].trimmingASCIIWhitespace())),
              let decoded = String(data: data, encoding: .utf8),
              let colon = decoded.firstIndex(of: ":") else {
            throw OAuthError(.invalidClient, "malformed Basic client credentials")
        }
        guard let id = try? FormParameters.decode(Array(decoded[..<colon].utf8)), !id.isEmpty,
              let secret = try? FormParameters.decode(Array(decoded[decoded.index(after: colon)...].utf8)) else {
            throw OAuthError(.invalidClient, "malformed Basic client credentials")
        }
        // `id:` with nothing after the colon is how some public clients send Basic: no secret.
        return Credentials(clientID: id, secret: secret.isEmpty ? nil : secret)
    }
}
