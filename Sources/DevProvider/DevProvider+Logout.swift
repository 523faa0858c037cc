import HTTP1
import HTTPServer
import Logging

/// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0 §2, §3).
extension DevProvider {
    func logoutEndpoint(_ request: HTTPRequest) async -> HTTPResponse {
        let parameters: FormParameters
        if request.head.method == "POST" {
            do throws(OAuthError) {
                parameters = try await readForm(request)
            } catch {
                return ProviderResponse.html(status: 400, ProviderPages.error(error.description))
            }
        } else {
            guard let parsed = try? FormParameters(encoded: request.head.query ?? "") else {
                return ProviderResponse.html(status: 400, ProviderPages.error("The request's query is not valid URL encoding."))
            }
            parameters = parsed
        }

        var hint: IDTokenHint?
        if let token = parameters["id_token_hint"] {
            guard let verified = try? await signingKey.verify(token, as: IDTokenHint.self) else {
                logger.info("logout refused: id_token_hint not issued by this provider")
                return ProviderResponse.html(status: 400, ProviderPages.error("The id_token_hint was not issued by this provider."))
            }
            hint = verified
        }
        if let clientID = parameters["client_id"], let hint, hint.aud != clientID {
            return ProviderResponse.html(status: 400, ProviderPages.error("client_id does not match the id_token_hint."))
        }
        let clientID = parameters["client_id"] ?? hint?.aud

        var notes: [String] = []
        if let hint, let sid = hint.sid {
            let ended = state.withLock { $0.endSessions(subject: hint.sub, sessionID: sid) }
            logger.info("provider session ended by RP-initiated logout", metadata: [
                "oauth.client_id": "\(clientID ?? "")", "oauth.sub": "\(hint.sub)", "oauth.sessions_ended": "\(ended.count)",
            ])
        } else {
            notes.append("No id_token_hint identified a provider session, so none was ended.")
        }

        if let target = parameters["post_logout_redirect_uri"] {
            // §3: redirect only to a URI registered for the client the hint or client_id names.
            if let clientID, let client = clients[clientID], client.postLogoutRedirectURIs.contains(target) {
                return ProviderResponse.redirect(to: FormEncoding.appendingQuery([("state", parameters["state"])], to: target))
            }
            notes.append("The post_logout_redirect_uri is not registered for this client, so you were not sent back.")
        }
        return ProviderResponse.html(ProviderPages.signedOut(note: notes.isEmpty ? nil : notes.joined(separator: " ")))
    }
}
