import GatehouseCore
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

    /// The session's claims as `allow=` rules read them and each rule's verdict, made the first
    /// time a rule asks: keyed by the rule, and by the session's version by construction (a changed
    /// session, a refresh's new claims included, is a new `CachedSession`).
    private let accessVerdicts = Mutex<(claims: SessionClaims?, verdicts: [(rule: Int, allowed: Bool)])>((nil, []))

    /// Whether `rule` admits this session; `groupsClaim` (the provider's `GROUPS_CLAIM`) is asked
    /// for only when the claims are read.
    func isAllowed(by rule: AccessRule, groupsClaim: () -> String) -> Bool {
        accessVerdicts.withLock { memo in
            if let known = memo.verdicts.first(where: { $0.rule == rule.id }) { return known.allowed }
            let claims = memo.claims ?? SessionClaims(claimsJSON: session.claims, provider: session.provider,
                                                      groupsClaim: groupsClaim())
            memo.claims = claims
            let allowed = rule.isSatisfied(by: claims)
            if memo.verdicts.count < 64 { memo.verdicts.append((rule.id, allowed)) }
            return allowed
        }
    }

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
