import GatehouseOIDC
import GatehouseSessions
import Synchronization

/// A session as `SessionCache` keeps it, with the `Authorization` value for its access token built
/// once. Immutable and shared by reference: a cache hit copies one reference, not the session's
/// strings and arrays; a changed session (new tokens) gets a new one.
final class CachedSession: Sendable {
    let session: Session
    /// `Bearer <access token>`.
    let authorization: String
    /// The session's DPoP key and its access token's `ath`, made the first time a call needs them
    /// (decoding the key derives the public key, a scalar multiplication, and `ath` is a hash of
    /// the token: neither is to be paid per proxied call).
    private let dpopBinding = Mutex<SessionDPoP??>(nil)

    var dpop: SessionDPoP? {
        dpopBinding.withLock { cached in
            if let cached { return cached }
            let binding = DPoPBinding.key(of: session.tokens).map {
                SessionDPoP(key: $0, authorization: authorization, ath: DPoPKey.ath(session.tokens.accessToken))
            }
            cached = .some(binding)
            return binding
        }
    }

    /// The ID token's `acr` and `auth_time`, read from the claims the first time a step-up route
    /// asks (most sessions never meet one, and reading the claims is a JSON parse).
    private let authenticationFacts = Mutex<AuthenticationClaims?>(nil)

    init(_ session: Session) {
        self.session = session
        authorization = DPoPBinding.authorization(session.tokens.accessToken, tokenType: session.tokens.tokenType)
    }

    var authentication: AuthenticationClaims {
        authenticationFacts.withLock { facts in
            if let facts { return facts }
            let made = AuthenticationClaims(json: session.claims)
            facts = made
            return made
        }
    }
}
