import GatehouseCore
import GatehouseSessions
import HTTP1

/// `GET /request-object/{handle}` (`GATEHOUSE_REQUEST_OBJECT=reference`): a pending login's request
/// object, fetched by the provider from the `request_uri` the browser brought it (RFC 9101 §5.2,
/// OIDC Core §6.2).
///
/// The handle is the login's state hash: 256 bits nobody guesses, the key the login is stored
/// under, so every instance sharing the store answers, and the object lives exactly as long as
/// the login (the callback takes both). It is not made one-time: providers fetch it more than once
/// (the OpenID Foundation's test OP does). Whoever holds the URL reads what the browser's URL
/// would carry by value; with `GATEHOUSE_REQUEST_OBJECT_ENCRYPTION=on` only the provider reads it.
struct RequestObjectEndpoint {
    let context: GatewayContext

    func respond(handle: String) async -> HTTPResponse {
        // Anything but a state hash is refused before the store is asked.
        guard Self.isStateHash(handle) else { return Self.notFound }
        let login: PendingLogin?
        do {
            login = try await context.sessions.pendingLogin(stateHash: handle, now: context.now())
        } catch {
            context.logger.error("request object: the session store failed", metadata: ["error": "\(error)"])
            return Responses.sessionStoreUnavailable()
        }
        guard let object = login?.requestObject else { return Self.notFound }
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/oauth-authz-req+jwt", "Cache-Control": "no-store"],
                            body: Array(object.utf8))
    }

    static let notFound = HTTPResponse.jsonError(status: 404, error: "not_found",
                                                 description: "No sign-in in progress has this request object.")

    /// 64 lowercase hexadecimal digits (`SecretHash.hex`).
    static func isStateHash(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }
}
