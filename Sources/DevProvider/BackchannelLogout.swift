import HTTP1
import HTTPClient
import Logging

/// Delivers a back-channel logout token: an HTTP POST of `logout_token=…` (OpenID Connect
/// Back-Channel Logout 1.0 §2.5). A protocol so tests can capture the tokens without a server.
public protocol BackchannelLogoutTransport: Sendable {
    /// POSTs `body` as `application/x-www-form-urlencoded` to `url`.
    /// - Returns: the HTTP status of the answer.
    /// - Throws: when the request could not be made or answered.
    func postForm(_ body: [UInt8], to url: String) async throws -> Int
}

/// Delivery through `FetchClient`, as the gateway's own provider calls; the targets
/// are the clients' `backchannelLogoutURI`s (loopback `http` for the development provider).
public struct HTTPBackchannelLogoutTransport: BackchannelLogoutTransport {
    /// Seconds for the whole delivery.
    public var timeout: Int

    public init(timeout: Int = 5) {
        self.timeout = timeout
    }

    public func postForm(_ body: [UInt8], to url: String) async throws -> Int {
        let nanoseconds = UInt64(max(1, timeout)) * 1_000_000_000
        let answer = try await FetchClient.shared.fetch("POST", url, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                                            body: body, timeoutNanoseconds: nanoseconds)
        return answer.status
    }
}

extension DevProvider {
    /// Ends the provider sessions of `sub` (only session `sid` when given), revokes their tokens,
    /// and POSTs a signed logout token to every client's `backchannelLogoutURI`.
    ///
    /// The logout token carries `iss`, `aud` (the client), `iat`, `exp`, `jti`, the back-channel
    /// logout event, `sub`, and `sid` when given; its header has `typ: logout+jwt` (§2.4).
    ///
    /// - Throws: `DevProviderError.backchannelLogoutFailed` naming the clients that did not answer
    ///   `2xx` (the others were notified); `DevProviderError.signingFailed` if signing failed.
    public func backchannelLogout(sub: String, sid: String?) async throws {
        let ended = state.withLock { $0.endSessions(subject: sub, sessionID: sid) }
        logger.info("back-channel logout", metadata: ["oauth.sub": "\(sub)", "oauth.sessions_ended": "\(ended.count)"])
        var failures: [BackchannelLogoutFailure] = []
        for client in configuration.clients {
            guard let uri = client.backchannelLogoutURI else { continue }
            let claims = LogoutTokenClaims(issuer: configuration.issuer, clientID: client.id,
                                           subject: sub, sessionID: sid, now: now)
            let token: String
            do {
                token = try await signingKey.sign(claims, type: "logout+jwt")
            } catch {
                throw DevProviderError.signingFailed(String(describing: error))
            }
            let body = Array(FormEncoding.encode([("logout_token", token)]).utf8)
            do {
                let status = try await transport.postForm(body, to: uri)
                if (200..<300).contains(status) {
                    state.withLock { $0.statistics.backchannelLogoutsDelivered += 1 }
                } else {
                    failures.append(BackchannelLogoutFailure(clientID: client.id, status: status,
                                                             reason: "the client answered \(status)"))
                }
            } catch {
                failures.append(BackchannelLogoutFailure(clientID: client.id, status: nil,
                                                         reason: String(describing: error)))
            }
        }
        if !failures.isEmpty {
            logger.info("back-channel logout not delivered to every client",
                        metadata: ["oauth.failed_clients": "\(failures.map(\.clientID))"])
            throw DevProviderError.backchannelLogoutFailed(failures)
        }
    }
}
