import HTTP1

/// `GET /.well-known/jwks.json`: the public keys that verify the gateway's identity assertions
/// (the current key, and the previous one while `GATEHOUSE_SECRET_KEY_PREVIOUS` is set), cacheable
/// for five minutes: an API refetches on an unknown `kid`, and the keys only change with the
/// secret key.
enum IdentityEndpoints {
    static func keySet(_ identities: IdentityIssuer) -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "public, max-age=300"],
                     body: identities.keySetDocument)
    }
}
