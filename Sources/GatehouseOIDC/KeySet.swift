import FoundationEssentials
import JWTKit

/// A signature-verified JWS: the algorithm and key that verified it, and its claims (not yet checked).
public struct VerifiedJWS: Sendable, Equatable {
    public let algorithm: SigningAlgorithm
    public let keyID: String?
    /// The `typ` header, if any (e.g. `logout+jwt`).
    public let type: String?
    public let claims: [String: JSONValue]
}

/// The provider's signing keys (`jwks_uri`), cached, with rate-limited refetches on an unknown `kid`.
///
/// Keys rotate: a token signed with a new key carries a `kid` the cache has not seen, so the set
/// is fetched again (OIDC Core §10.1.1). How often depends on where the token came from
/// (``TokenChannel``), each channel with a limit of its own, so that one cannot use up the other's:
///
/// - `.providerResponse` (ID tokens from the token endpoint, signed UserInfo): only the provider
///   chooses their `kid`s, so an unknown one means a rotation. The next such refetch waits
///   ``providerResponseRefetchInterval`` (default 2 s), unless the last one changed the set (two
///   rotations in a row): a rotation is seen within seconds whatever anyone else sends.
/// - `.unsolicited` (back-channel logout tokens, posted by anyone): after such a refetch the next
///   one waits ``minimumRefetchInterval`` (default 30 s), unless that refetch brought a different
///   key set (the provider is rotating), when the next unknown `kid` may refetch once more at once.
///   So forged tokens with random `kid`s cannot make Gatehouse hammer the provider, and they no
///   longer hold back the refetch a login needs.
///
/// A failed first load is retried with exponential back-off (1 s doubling to 60 s). Concurrent
/// callers share one fetch.
///
/// For example: `let jws = try await keySet.verify(idToken, from: .providerResponse)`.
public actor KeySet {
    public nonisolated let jwksURI: String
    public nonisolated let allowedAlgorithms: Set<SigningAlgorithm>
    public nonisolated let minimumRefetchInterval: TimeInterval
    public nonisolated let providerResponseRefetchInterval: TimeInterval
    private let http: any ProviderHTTPClient
    private let now: @Sendable () -> Date

    private var keys: [ProviderKey]?
    private var lastError: KeySetError?
    private var appliedGeneration = 0
    /// When the last refetch an unsolicited token's unknown `kid` caused started, and whether it
    /// changed the set.
    private var lastUnsolicitedRefetch: (started: Date, changedKeys: Bool)?
    /// When the last refetch a provider response's unknown `kid` caused started, and whether it
    /// changed the set.
    private var lastProviderResponseRefetch: (started: Date, changedKeys: Bool)?
    /// Back-off of the first load after failures: the earliest next attempt and the current delay.
    private var loadRetry: (notBefore: Date, delay: TimeInterval)?
    private var inFlight: Task<(generation: Int, result: Result<[ProviderKey], KeySetError>), Never>?
    private var verifiers: [String: JWTKeyCollection] = [:]
    /// How many times `jwks_uri` was requested (for tests and metrics).
    public private(set) var fetchCount = 0

    /// - Parameters:
    ///   - allowedAlgorithms: usually ``SigningAlgorithm/allowList(configured:advertised:)``.
    ///   - minimumRefetchInterval: the least time after an unsolicited token's unknown-`kid` refetch
    ///     that found no new key before the next such refetch (default 30 s).
    ///   - providerResponseRefetchInterval: the least time between refetches for provider responses
    ///     (default 2 s).
    ///   - now: the clock, injected for tests.
    public init(jwksURI: String, http: any ProviderHTTPClient, allowedAlgorithms: Set<SigningAlgorithm>,
                minimumRefetchInterval: TimeInterval = 30, providerResponseRefetchInterval: TimeInterval = 2,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.jwksURI = jwksURI
        self.http = http
        self.allowedAlgorithms = allowedAlgorithms
        self.minimumRefetchInterval = max(0, minimumRefetchInterval)
        self.providerResponseRefetchInterval = max(0, providerResponseRefetchInterval)
        self.now = now
    }

    /// Uses the metadata's `jwks_uri`; the algorithms are ``SigningAlgorithm/allowList(configured:advertised:)``
    /// of `configuredAlgorithms` (`GATEHOUSE_ID_TOKEN_ALGS`) and its `id_token_signing_alg_values_supported`.
    public init(metadata: ProviderMetadata, http: any ProviderHTTPClient, configuredAlgorithms: [String]? = nil,
                minimumRefetchInterval: TimeInterval = 30, now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(jwksURI: metadata.jwksURI, http: http,
                  allowedAlgorithms: SigningAlgorithm.allowList(configured: configuredAlgorithms,
                                                                advertised: metadata.idTokenSigningAlgValuesSupported),
                  minimumRefetchInterval: minimumRefetchInterval, now: now)
    }

    /// Fetches the key set now, ignoring the rate limit (for start-up and readiness).
    public func refresh() async throws(KeySetError) {
        if case .failure(let error)? = await fetch(.forced) { throw error }
    }

    /// Verifies the signature of a compact JWS with a provider key and returns its claims.
    ///
    /// Refuses `alg: none` and HMAC before looking at any key, refuses algorithms outside
    /// ``allowedAlgorithms``, selects keys by `kid` (every type-compatible key when the token has
    /// none), and refetches the set once (rate-limited per `channel`) when no key matches.
    /// - Throws: ``JWSVerificationError``.
    public func verify(_ token: String, from channel: TokenChannel) async throws(JWSVerificationError) -> VerifiedJWS {
        let header = try CompactJWSHeader(token: token)
        if SigningAlgorithm.isForbidden(header.alg) { throw .forbiddenAlgorithm(header.alg) }
        guard let algorithm = SigningAlgorithm(rawValue: header.alg), allowedAlgorithms.contains(algorithm) else {
            throw .algorithmNotAllowed(header.alg, allowed: allowedAlgorithms.map(\.rawValue).sorted())
        }
        if let crit = header.crit { throw .unsupportedCriticalHeader(crit) }

        var loadedNow = false
        if keys == nil {
            switch await fetch(.firstLoad) {
            case .failure(let error)?: throw .keySetUnavailable(error)
            case nil where keys == nil: throw .keySetUnavailable(lastError ?? .noUsableKeys)
            default: loadedNow = true
            }
        }
        var candidates = matchingKeys(kid: header.kid, algorithm: algorithm)
        if candidates.isEmpty && !loadedNow {
            switch await fetch(.unknownKey(channel)) {
            case .success?: candidates = matchingKeys(kid: header.kid, algorithm: algorithm)
            case .failure(let error)?: throw .keySetUnavailable(error)
            case nil: break
            }
            loadedNow = true
        }
        guard !candidates.isEmpty else { throw .unknownKey(kid: header.kid) }
        if let verified = try await verify(token, header: header, algorithm: algorithm, with: candidates) {
            return verified
        }
        // A token without `kid` that no cached key verifies may be signed with a key published
        // since: one refetch, under the same limit as an unknown `kid`.
        if header.kid == nil && !loadedNow, case .success? = await fetch(.unknownKey(channel)),
           let verified = try await verify(token, header: header, algorithm: algorithm,
                                           with: matchingKeys(kid: nil, algorithm: algorithm)) {
            return verified
        }
        throw .invalidSignature(kid: header.kid)
    }

    /// The first candidate key that verifies the token, or nil.
    private func verify(_ token: String, header: CompactJWSHeader, algorithm: SigningAlgorithm,
                        with candidates: [ProviderKey]) async throws(JWSVerificationError) -> VerifiedJWS? {
        for key in candidates {
            guard let collection = await verifier(for: key, algorithm: algorithm) else { continue }
            do {
                let payload = try await collection.verify(token, as: RawClaims.self)
                return VerifiedJWS(algorithm: algorithm, keyID: header.kid, type: header.typ, claims: payload.claims)
            } catch let error as JWTError where error.errorType == .malformedToken {
                throw .malformed("the payload is not a JSON object")
            } catch {
                continue
            }
        }
        return nil
    }

    func matchingKeys(kid: String?, algorithm: SigningAlgorithm) -> [ProviderKey] {
        (keys ?? []).filter { key in
            key.kty == algorithm.keyType
                && (algorithm.curve == nil || key.crv == algorithm.curve)
                && (key.alg == nil || key.alg == algorithm.rawValue)
                && (kid == nil || key.kid == kid)
        }
    }

    /// A one-key jwt-kit collection whose JWK is pinned to `algorithm`, so jwt-kit can never pick
    /// another key (its default-key fallback) or another algorithm for it.
    private func verifier(for key: ProviderKey, algorithm: SigningAlgorithm) async -> JWTKeyCollection? {
        let cacheKey = "\(key.index)|\(algorithm.rawValue)"
        if let cached = verifiers[cacheKey] { return cached }
        var jwk = key.jwk
        jwk.algorithm = JWK.Algorithm(rawValue: algorithm.rawValue)
        jwk.keyIdentifier = JWKIdentifier(string: "provider-key")
        let collection = JWTKeyCollection(defaultJWTParser: DefaultJWTParser(jsonDecoder: ClaimsJSONDecoder()))
        do {
            try await collection.add(jwk: jwk, isDefault: true)
        } catch {
            return nil
        }
        verifiers[cacheKey] = collection
        return collection
    }

    /// Why a fetch is wanted; each has its own limit.
    private enum FetchReason {
        /// Start-up and readiness: always.
        case forced
        /// No set yet: after a failure, exponential back-off.
        case firstLoad
        /// A token names a `kid` the set lacks (or has none and no key verifies it).
        case unknownKey(TokenChannel)
    }

    /// Whether a fetch for `reason` may start at `now`.
    private func mayFetch(_ reason: FetchReason, at now: Date) -> Bool {
        switch reason {
        case .forced:
            return true
        case .firstLoad:
            guard let loadRetry else { return true }
            return now >= loadRetry.notBefore
        case .unknownKey(.providerResponse):
            guard let last = lastProviderResponseRefetch else { return true }
            return last.changedKeys || now.timeIntervalSince(last.started) >= providerResponseRefetchInterval
        case .unknownKey(.unsolicited):
            guard let last = lastUnsolicitedRefetch else { return true }
            return last.changedKeys || now.timeIntervalSince(last.started) >= minimumRefetchInterval
        }
    }

    /// Fetches unless rate-limited (`nil`), joining a fetch already under way.
    private func fetch(_ reason: FetchReason) async -> Result<Void, KeySetError>? {
        let task: Task<(generation: Int, result: Result<[ProviderKey], KeySetError>), Never>
        var counted: TokenChannel? = nil
        if let inFlight {
            task = inFlight
        } else {
            let started = now()
            guard mayFetch(reason, at: started) else { return nil }
            switch reason {
            case .unknownKey(.unsolicited):
                lastUnsolicitedRefetch = (started, false)
                counted = .unsolicited
            case .unknownKey(.providerResponse):
                lastProviderResponseRefetch = (started, false)
                counted = .providerResponse
            case .forced, .firstLoad:
                break
            }
            fetchCount += 1
            let generation = fetchCount
            let (http, jwksURI) = (self.http, self.jwksURI)
            task = Task { (generation, await Self.download(jwksURI, http: http)) }
            inFlight = task
        }
        let (generation, result) = await task.value
        if generation > appliedGeneration {
            appliedGeneration = generation
            inFlight = nil
            switch result {
            case .success(let newKeys):
                let changed = Self.keyIDs(newKeys) != Self.keyIDs(keys ?? [])
                switch counted {
                case .unsolicited?: lastUnsolicitedRefetch?.changedKeys = changed
                case .providerResponse?: lastProviderResponseRefetch?.changedKeys = changed
                case nil: break
                }
                keys = newKeys
                verifiers = [:]
                lastError = nil
                loadRetry = nil
            case .failure(let error):
                lastError = error
                if keys == nil {
                    let delay = min((loadRetry?.delay ?? 0.5) * 2, 60)
                    loadRetry = (now().addingTimeInterval(delay), delay)
                }
            }
        }
        return result.map { _ in () }
    }

    /// What identifies a set for "did it change": each key's `kid` and public parameters.
    private static func keyIDs(_ keys: [ProviderKey]) -> Set<String> {
        Set(keys.map { key in
            let parameters = [key.jwk.modulus, key.jwk.exponent, key.jwk.x, key.jwk.y].compactMap { $0 }
            return "\(key.kid ?? "")|\(key.kty)|\(parameters.joined(separator: ","))"
        })
    }

    private static func download(_ jwksURI: String, http: any ProviderHTTPClient) async -> Result<[ProviderKey], KeySetError> {
        await fetchDocument(jwksURI, http: http).flatMap { response in
            Result { () throws(KeySetError) in try ProviderKey.parseSet(response.body) }
        }
    }

    /// The provider's JWKS answer (`200` only), for the signing keys here and the encryption keys
    /// (`ProviderEncryptionKeySource`).
    static func fetchDocument(_ jwksURI: String, http: any ProviderHTTPClient) async -> Result<ProviderHTTPResponse, KeySetError> {
        let response: ProviderHTTPResponse
        do {
            response = try await http.send(ProviderHTTPRequest(
                method: .get, url: jwksURI,
                headers: [ProviderHTTPHeader("Accept", "application/jwk-set+json, application/json")], operation: .jwks))
        } catch {
            return .failure(.transport(error))
        }
        guard response.status == 200 else { return .failure(.unexpectedStatus(response.status)) }
        return .success(response)
    }
}

/// Where a token to verify came from, which decides how often its unknown `kid` may refetch the
/// provider's keys (``KeySet``).
public enum TokenChannel: Sendable, Equatable {
    /// An answer to a request the gateway made to the provider over TLS (the token endpoint's ID
    /// token, a signed UserInfo answer): its `kid` is the provider's choice.
    case providerResponse
    /// Posted to the gateway by anyone (a back-channel logout token): its `kid` may be made up.
    case unsolicited
}

/// One usable key of the provider's JWKS (RFC 7517 §4–5).
struct ProviderKey: Sendable {
    let index: Int
    let jwk: JWK
    let kid: String?
    let kty: String
    let alg: String?
    let crv: String?

    /// Keeps the keys Gatehouse can verify with and skips the rest (encryption keys, symmetric
    /// keys, unknown types), so one exotic key does not break the whole set.
    static func parseSet(_ body: [UInt8]) throws(KeySetError) -> [ProviderKey] {
        guard let value = try? JSONValue.parse(body),
              let entries = value.objectValue?["keys"]?.arrayValue else {
            throw .malformed("not a JSON object with a \"keys\" array")
        }
        var keys: [ProviderKey] = []
        for entry in entries {
            guard let object = entry.objectValue, let kty = object["kty"]?.stringValue,
                  ["RSA", "EC", "OKP"].contains(kty) else { continue }
            if let use = object["use"], use.stringValue != "sig" { continue }
            let alg = object["alg"]?.stringValue
            if let alg, SigningAlgorithm(rawValue: alg) == nil { continue }
            guard let data = try? JSONEncoder().encode(entry), let jwk = try? JSONDecoder().decode(JWK.self, from: data) else {
                continue
            }
            keys.append(ProviderKey(index: keys.count, jwk: jwk, kid: object["kid"]?.stringValue, kty: kty, alg: alg,
                                    crv: object["crv"]?.stringValue))
        }
        guard !keys.isEmpty else { throw .noUsableKeys }
        return keys
    }
}

/// Every claim of a token, for jwt-kit to decode once the signature has verified, or to sign (the
/// client assertion). Its `verify` does nothing: the validators check claims themselves, with the
/// operator-facing errors.
struct RawClaims: JWTPayload {
    let claims: [String: JSONValue]

    init(claims: [String: JSONValue]) { self.claims = claims }

    init(from decoder: any Decoder) throws {
        claims = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(claims)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// jwt-kit's JSON decoder for the tokens `KeySet` verifies: the claims (`RawClaims`) through
/// `JSONValue.parse` (one pass, repeated names refused), anything else (jwt-kit's header) through
/// jwt-kit's own `JSONDecoder`.
struct ClaimsJSONDecoder: JWTJSONDecoder {
    private static let fallback = JSONDecoder.defaultForJWT

    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        guard type == RawClaims.self else { return try Self.fallback.decode(type, from: data) }
        guard let claims = try JSONValue.parse(data).objectValue,
              let decoded = RawClaims(claims: claims) as? T else {
            throw JSONParseError(offset: 0, reason: "the claims are not a JSON object")
        }
        return decoded
    }
}
