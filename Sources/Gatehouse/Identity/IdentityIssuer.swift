import Crypto
import EventLoops
import GatehouseCore
import GatehouseEncoding
import GatehouseOIDC
import GatehouseSessions
import HTTP1

/// What an upstream is told about the user on routes with `identity=` or `token=assertion` (SPEC
/// "Identity for your own APIs"): the signed assertion and the identity headers, made from the
/// session and the route, and kept per session and route until shortly before the assertion
/// expires, so that the proxy path signs about once per lifetime instead of on every request.
///
/// The memo is keyed by construction on everything the fields are made from: the session (its id
/// hash and its version, which every token or claims update bumps) and the route (its prefix, one
/// route per prefix). Each event loop keeps its own (no lock, no shared reference count on the
/// proxy path); with the speed layer off every request is signed afresh.
final class IdentityIssuer: Sendable {
    /// The fields for one request.
    struct Issued {
        /// Added to the upstream request: the assertion header and/or the identity headers.
        let fields: [HTTPField.Checked]
        /// `Bearer <assertion>` for `token=assertion`, else nil.
        let assertionBearer: String?
    }

    let signingKey: AssertionSigningKey
    private let previousKey: AssertionSigningKey?
    /// `iss`: the gateway's public URL.
    private let issuer: String
    private let headerName: String
    private let lifetime: Int64
    private let providers: ProviderRegistry
    private let speedLayer: SpeedLayer
    /// HMAC key of the assertion's `sid`: a per-session value that is neither the cookie nor its hash.
    private let handleKey: SymmetricKey
    /// The JWKS document, made once.
    let keySetDocument: [UInt8]

    init(secretKey: [UInt8], previousSecretKey: [UInt8]?, configuration: GatehouseConfiguration,
         providers: ProviderRegistry, speedLayer: SpeedLayer) {
        signingKey = AssertionSigningKey(secretKey: secretKey)
        previousKey = previousSecretKey.map(AssertionSigningKey.init(secretKey:))
        issuer = configuration.publicURL.origin
        headerName = configuration.assertionHeader
        lifetime = Int64(configuration.assertionTTL)
        self.providers = providers
        self.speedLayer = speedLayer
        handleKey = SymmetricKey(data: HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: secretKey),
                                                              salt: Array("gatehouse-assertion".utf8),
                                                              info: Array("gatehouse assertion sid v1".utf8),
                                                              outputByteCount: 32))
        keySetDocument = AssertionSigningKey.keySet(current: signingKey, previous: previousKey,
                                                    encryption: configuration.clientEncryptionKeyPEMs.compactMap {
                                                        try? ClientEncryptionKey(pem: $0).publicJWK
                                                    })
    }

    /// The assertion's `aud` on `route`: its `audience=` option, else the upstream's origin. On
    /// `auth=client` that option is parsed as the client-credentials grant's, and names the same API.
    static func audience(of route: UpstreamRoute) -> String {
        if let audience = route.identity.audience { return audience }
        if case .client(let grant, _) = route.auth, let audience = grant.audience { return audience }
        return "\(route.upstream.scheme)://\(route.upstream.authority)"
    }

    /// The fields `route` adds for `session` at `now`; nil when the route adds none.
    func issue(for route: UpstreamRoute, session cached: CachedSession, now: Int64) -> Issued? {
        let identity = route.identity
        guard identity.signsAssertion || identity.sendsIdentityHeaders else { return nil }
        let memo = speedLayer.isOn ? EventLoop.withCurrent { loop in
            loop.localValue(for: ObjectIdentifier(self)) { LoopIdentityMemo() }
        } : nil
        // By session (its id hash: a cheap hash), then the session's few routes by prefix (compared,
        // not hashed).
        let key = SessionHashKey(cached.session.idHash)
        let version = cached.session.version
        let prefix = route.prefix
        if let entries = memo?.entries[key],
           let entry = entries.first(where: { $0.route == prefix }),
           entry.version == version, now >= entry.issuedAt, now < entry.renewAt {
            return entry.issued
        }
        let issued = make(for: route, session: cached.session, now: now)
        if let memo {
            if memo.entries.count >= LoopIdentityMemo.capacity, memo.entries[key] == nil {
                memo.entries = memo.entries.filter { $0.value.contains { now < $0.renewAt } }
                if memo.entries.count >= LoopIdentityMemo.capacity { memo.entries.removeAll(keepingCapacity: true) }
            }
            var entries = memo.entries[key, default: []].filter { $0.route != prefix && $0.version == version }
            entries.append(MemoEntry(route: prefix, version: version, issuedAt: now,
                                     renewAt: now + Self.renewalAge(lifetime: lifetime), issued: issued))
            memo.entries[key] = entries
        }
        return issued
    }

    /// When an assertion is replaced: a quarter of its lifetime (at least 5 s) before it expires,
    /// so an upstream never receives one about to expire (and clocks a little apart still agree).
    static func renewalAge(lifetime: Int64) -> Int64 {
        max(1, lifetime - max(5, lifetime / 4))
    }

    private func make(for route: UpstreamRoute, session: Session, now: Int64) -> Issued {
        let identity = route.identity
        let provider = providers.provider(named: session.provider)?.configuration
        let facts = IdentityAssertion(claimsJSON: session.claims, subject: session.sub, provider: session.provider,
                                      providerIssuer: provider?.issuer ?? "", sessionHandle: handle(of: session),
                                      groupsClaim: provider?.idp.groupsClaim ?? "groups")
        var fields: [HTTPField.Checked] = []
        var bearer: String?
        if identity.signsAssertion,
           let assertion = signingKey.sign(facts.claims(issuer: issuer, audience: Self.audience(of: route),
                                                        issuedAt: now, lifetime: lifetime)) {
            if identity.sendsAssertionHeader, let field = HTTPField.Checked(name: headerName, value: assertion) {
                fields.append(field)
            }
            if identity.bearer == .assertion { bearer = "Bearer " + assertion }
        }
        if identity.sendsIdentityHeaders {
            // A value that cannot be a field's (a control character in a claim) is left out.
            fields += facts.headerValues.compactMap { HTTPField.Checked(name: $0.name, value: $0.value) }
        }
        return Issued(fields: fields, assertionBearer: bearer)
    }

    /// The assertion's `sid`: HMAC of the session's id hash, so it names the session to the API (to
    /// tie its own state to it) without being anything a browser could present.
    func handle(of session: Session) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array(session.idHash.utf8), using: handleKey)
        return Base64URL.encode(Array(mac).prefix(18))
    }

    private struct MemoEntry {
        let route: String
        let version: Int64
        let issuedAt: Int64
        let renewAt: Int64
        let issued: Issued
    }

    /// One event loop's memo (loop-confined, so no lock).
    private final class LoopIdentityMemo {
        static let capacity = 16_384
        var entries: [SessionHashKey: [MemoEntry]] = [:]
    }
}
