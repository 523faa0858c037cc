import FoundationEssentials
import GatehouseOIDC
import GatehouseSessions
import GatehouseEncoding

/// The session claims after a refresh: the refreshed ID token, validated against the session's
/// original claims (OIDC Core §12.2), and UserInfo merged in when it is configured (§5.3).
enum RefreshedClaims {
    enum Failure: Error {
        /// The refresh must fail and the session stay as it was.
        case invalidIDToken(IDTokenError)
        /// The tokens are kept; the claims stay as they were.
        case userinfo(UserInfoError)
    }

    /// The claims JSON to store, or nil when they do not change.
    static func resolve(response: TokenResponse, session: Session, clients: ProviderClients,
                        now: Int64) async -> Result<[UInt8]?, Failure> {
        let stored = (try? JSONValue.parse(session.claims))?.objectValue ?? [:]
        var base = stored
        var changed = false
        if let idToken = response.idToken {
            do {
                let refreshed = try await clients.idTokens.validateRefreshed(
                    idToken, original: stored, now: Date(timeIntervalSince1970: TimeInterval(now)))
                base = refreshed.all
                // Apple's refreshed token has the same strings for booleans, and never the name
                // the first authorization posted.
                if clients.appleIdentity { base = AppleIdentity.refreshedClaims(base, stored: stored) }
                changed = true
            } catch {
                return .failure(.invalidIDToken(error))
            }
        }
        if let userinfo = clients.userinfo {
            do {
                let extra = try await userinfo.fetch(accessToken: response.accessToken, expectedSubject: session.sub,
                                                     dpop: DPoPBinding.userinfo(response.tokenType, key: DPoPBinding.key(of: session.tokens),
                                                                                clients: clients))
                // UserInfo values replace the ones an earlier UserInfo call stored (the user may have
                // changed their name); claims of the ID token are never replaced.
                let idTokenClaims = response.idToken == nil ? Self.unverifiedStoredIDTokenClaims(of: session) ?? base : base
                base = UserInfoClaims.merge(idToken: idTokenClaims, userinfo: extra)
                changed = true
            } catch {
                if changed { return .success(Self.encode(UserInfoClaims.merge(idToken: base, userinfo: stored))) }
                return .failure(.userinfo(error))
            }
        }
        return .success(changed ? Self.encode(base) : nil)
    }

    /// The claims of the session's stored ID token. It was validated when it was stored, and it is
    /// read back from the sealed session, so its payload is trusted without a second verification.
    private static func unverifiedStoredIDTokenClaims(of session: Session) -> [String: JSONValue]? {
        guard let token = session.tokens.idToken else { return nil }
        let parts = Array(token.utf8).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]) else { return nil }
        return (try? JSONValue.parse(payload))?.objectValue
    }

    private static func encode(_ claims: [String: JSONValue]) -> [UInt8]? {
        if let written = JSONValueWriter.sortedKeys(claims) { return written }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(claims)).map(Array.init)
    }
}
