import EventLoops
import FoundationEssentials
import GatehouseCore
import GatehouseSessions
import GatehouseTime
import HTTP1
import Logging
import Synchronization

/// The session door's fast side: from a request's cookies to its session and bearer without
/// suspending, on the loop. The cookie's value is checked once (`SessionCookieKey`), its id found
/// in the loop's memo (`SessionIDMemo`), the bearer taken from the loop's copy while it is good.
extension SessionCache {
    /// The session id presented by the request: its one well-formed session cookie, or, when the
    /// browser sends several cookies of that name, the first of them (at most
    /// `maximumCookieCandidates`) that names a live session.
    ///
    /// A browser keeps same-named cookies set for different paths or by a sibling subdomain
    /// ("cookie tossing") and sends them all, the longest path first; a planted value must not
    /// shadow the real one. With a single value nothing is looked up here and nothing allocated:
    /// the caller's `resolve` does the one lookup. Without any live candidate the first
    /// well-formed value is returned (and resolves to nothing).
    public func sessionID(in headers: HTTPHeaders) async -> SessionID? {
        let (first, several) = wellFormedSessionID(in: headers)
        guard several else { return first }
        return await firstLiveCandidate(in: headers) ?? first
    }

    /// The request's first well-formed session cookie (its memo key and id), and whether there are
    /// several: the one rule for "the request's session cookie" (`sessionID`, `cachedResolution`,
    /// `loneSessionCookieKey`). Well-formed: exactly `SessionID.cookieValueLength` bytes that decode
    /// to a session id.
    func wellFormedSessionCookie(in headers: HTTPHeaders) -> (first: (key: SessionCookieKey, id: SessionID)?, several: Bool) {
        var first: (key: SessionCookieKey, id: SessionID)? = nil
        var several = false
        CookieParser.forEachValueBytes(named: cookieName, in: headers) { value in
            guard let key = SessionCookieKey(value), let id = knownID(key, value) else { return true }
            guard first == nil else {
                several = true
                return false
            }
            first = (key, id)
            return true
        }
        return (first, several)
    }

    func wellFormedSessionID(in headers: HTTPHeaders) -> (first: SessionID?, several: Bool) {
        let (first, several) = wellFormedSessionCookie(in: headers)
        return (first?.id, several)
    }

    /// The proxy's usual case without a suspension: the request's one session cookie names a
    /// session whose cached entry is fresh and still valid; its idle timeout slides as in
    /// `resolveWithAuthorization`. Nil for everything else (no or several cookies, an entry to
    /// load, an expired session): the caller then takes the async path, which decides those.
    func cachedResolution(in headers: HTTPHeaders, now: Int64) -> Resolved? {
        catchUpWithOtherProcesses()
        let (found, several) = wellFormedSessionID(in: headers)
        guard let id = found, !several else { return nil }
        let clock = self.clock.monotonicNanoseconds()
        guard let cached = cache.withLock({ $0[SessionHashKey(id.hash)] }),
              clock < cached.loadedAt || clock - cached.loadedAt < maximumAgeNanoseconds else { return nil }
        return settle(cached, idHash: id.hash, now: now, slide: true, changed: false)
    }

    /// The key of the request's one well-formed session cookie; nil when it has none, or several
    /// (then only the shared entry's checks decide).
    func loneSessionCookieKey(in headers: HTTPHeaders) -> SessionCookieKey? {
        let (first, several) = wellFormedSessionCookie(in: headers)
        return several ? nil : first?.key
    }

    /// The proxy's usual case on an event loop: the `Authorization` value for the request's one
    /// session cookie (`loneKey`, found before: `RequestFieldMemo`), when `cachedResolution` would
    /// give its session and the access token is neither ended nor due for a refresh
    /// (`refreshMargin`, as `TokenRefresher.needsRefresh`). Nil for everything else: the caller
    /// takes the async path, which decides those.
    ///
    /// Answered from the loop's own copy (`LoopBearer`, kept in the loop's `SessionIDMemo`) while
    /// that copy is as good as the shared entry: no session of this process changed or ended since
    /// (`generation`), the entry it came from is still fresh (0.5 s), and this request slides the
    /// idle expiry to where the copy's request did (the same second). Otherwise the shared entry
    /// decides, as `cachedResolution`, and a new copy is made from it. So the loops touch the shared
    /// lock, entry and strings about once a second per session instead of on every request.
    ///
    /// With `rule` (a route's `allow=`), nil also when the session does not satisfy it.
    func cachedBearer(in headers: HTTPHeaders, loneKey key: SessionCookieKey?, now: Int64, refreshMargin: Int64,
                      rule: AccessRule? = nil) -> String? {
        let memo = EventLoop.withCurrent { loop in
            loop.localValue(for: ObjectIdentifier(self)) { LoopIDMemo() }
        }
        guard let key, let memo, speedLayer.isOn else {
            guard let resolved = sharedBearer(in: headers, now: now, refreshMargin: refreshMargin)?.resolved else { return nil }
            if let rule, !resolved.cached.isAllowed(by: rule, groupsClaim: { groupsClaim(of: resolved.cached) }) {
                return nil
            }
            return resolved.authorization
        }
        let ruleID = rule?.id ?? 0
        // Before the generation is read: an ending read from the board moves it.
        catchUpWithOtherProcesses()
        let generation = self.generation.load(ordering: .acquiring)
        let clock = self.clock.monotonicNanoseconds()
        let idleSeconds = self.idleSeconds, maximumAge = maximumAgeNanoseconds
        if let authorization = memo.memo.bearer(for: key, { bearer in
            bearer.generation == generation
                && (clock < bearer.loadedAt || clock - bearer.loadedAt < maximumAge)
                && now < bearer.usableBefore
                && now < bearer.idleExpiresAt
                && SessionLifetime.idleExpiry(slidAt: now, idleSeconds: idleSeconds, expiresAt: bearer.expiresAt)
                    == bearer.idleExpiresAt
                && (ruleID == 0 || bearer.allowedRules.contains(ruleID))
        }) {
            return authorization
        }
        guard let (resolved, usableBefore) = sharedBearer(in: headers, now: now, refreshMargin: refreshMargin) else {
            return nil
        }
        // A copy in storage of this loop's own: the shared string's reference count is what moved
        // between the cores.
        let authorization = resolved.authorization.ownedCopy
        let allowedRules = accessRules.isEmpty ? [] : accessRules.filter { candidate in
            resolved.cached.isAllowed(by: candidate, groupsClaim: { groupsClaim(of: resolved.cached) })
        }.map(\.id)
        memo.memo.remember(LoopBearer(generation: generation, loadedAt: resolved.loadedAt,
                                      idleExpiresAt: resolved.idleExpiresAt,
                                      expiresAt: resolved.cached.session.expiresAt,
                                      usableBefore: usableBefore, authorization: authorization,
                                      allowedRules: allowedRules),
                           for: key)
        if ruleID != 0, !allowedRules.contains(ruleID) { return nil }
        return authorization
    }

    /// The groups claim of the session's provider (`GATEHOUSE_GROUPS_CLAIM`).
    func groupsClaim(of cached: CachedSession) -> String {
        groupsClaims[cached.session.provider] ?? "groups"
    }

    /// The shared entry behind the request's one session cookie when `cachedBearer` would give its
    /// `Authorization` (fresh, active, the token neither ended nor due), without the loop's copy:
    /// routes that tell the upstream who the user is need the session itself (`IdentityIssuer`).
    func cachedProxySession(in headers: HTTPHeaders, now: Int64, refreshMargin: Int64) -> Resolved? {
        sharedBearer(in: headers, now: now, refreshMargin: refreshMargin)?.resolved
    }

    /// `cachedResolution` with the token checks of `cachedBearer`, and the first second at which
    /// the token ends or is due.
    func sharedBearer(in headers: HTTPHeaders, now: Int64,
                              refreshMargin: Int64) -> (resolved: Resolved, usableBefore: Int64)? {
        guard let resolved = cachedResolution(in: headers, now: now) else { return nil }
        let tokens = resolved.tokens
        let dueAt = AccessTokenRenewal.dueAt(expiresAt: tokens.accessTokenExpiresAt,
                                             lifetime: tokens.accessTokenLifetime, margin: refreshMargin)
        let usableBefore = min(dueAt ?? .max, AccessTokenExpiry.endsAt(tokens) ?? .max)
        guard now < usableBefore else { return nil }
        return (resolved, usableBefore)
    }

    /// How many well-formed values of the session cookie are looked up, at most, per request.
    static let maximumCookieCandidates = 4

    /// The rare path (several cookies of our name): each candidate costs a cache or store lookup,
    /// which also leaves the live one cached for the caller's `resolve`.
    func firstLiveCandidate(in headers: HTTPHeaders) async -> SessionID? {
        var candidates: [SessionID] = []
        CookieParser.forEachValueBytes(named: cookieName, in: headers) { value in
            guard let key = SessionCookieKey(value), let id = knownID(key, value) else { return true }
            candidates.append(id)
            return candidates.count < Self.maximumCookieCandidates
        }
        let now = clock.unixSeconds()
        for id in candidates where (try? await resolve(idHash: id.hash, now: now, slide: false)) != nil {
            return id
        }
        return nil
    }

    /// Validating and hashing a cookie value (base64url decoding, SHA-256, hex) costs more than the
    /// rest of a proxied request's session work, and a browser sends the same value every time:
    /// remember the ids of recent values (`SessionIDMemo`). Only values that passed validation are
    /// remembered.
    ///
    /// One memo per event loop, made on its first request: a value's id never changes, so a loop
    /// needs nobody else's, and the loops then share neither a lock nor the ids' strings (each
    /// request locked one shared mutex and retained strings another core had just touched). Off
    /// the loops (tests, tools) every value is validated.
    func knownID(_ key: SessionCookieKey, _ cookieValue: UnsafeBufferPointer<UInt8>) -> SessionID? {
        // Keyed by the value's bytes (`SessionCookieKey`): no String of the value, no String hashing.
        let memo = speedLayer.isOn ? EventLoop.withCurrent { loop in
            loop.localValue(for: ObjectIdentifier(self)) { LoopIDMemo() }
        } : nil
        if let known = memo?.memo.id(for: key) { return known }
        guard let id = SessionID(cookieValue: String(decoding: cookieValue, as: UTF8.self)) else { return nil }
        memo?.memo.remember(id, for: key)
        return id
    }

    /// A loop's `SessionIDMemo` (loop-confined, so no lock).
    final class LoopIDMemo {
        var memo = SessionIDMemo()
    }
}

/// The session cache's memo of recent cookie values: which session id each well-formed value is
/// (validating and hashing a value costs far more than the rest of a proxied request's session
/// work, and a browser sends the same value every time).
///
/// Direct-mapped: each value has one slot, chosen by its words mixed with a random seed, and a
/// value that lands on a taken slot replaces what was there. A look-up is one slot compared, no
/// hashing (a seeded `Dictionary` look-up of the six words cost ~900 instructions per proxied
/// request). Values are chosen by clients, but there are no chains to pile up in: the worst a
/// client can do is push others' values out, each of which then costs one validation again —
/// what emptying a full dictionary memo did to all of them at once.
struct SessionIDMemo {
    private struct Slot {
        let key: SessionCookieKey
        let id: SessionID
        /// The proxy's copy of the session behind this value, once a request on this loop resolved it.
        var bearer: LoopBearer?
    }

    static let slotCount = 4096
    private var slots: [Slot?]
    private let seed: UInt64

    init(seed: UInt64 = UInt64.random(in: 1 ... .max)) {
        slots = Array(repeating: nil, count: Self.slotCount)
        self.seed = seed | 1
    }

    func id(for key: SessionCookieKey) -> SessionID? {
        guard let slot = slots[key.slotIndex(seed: seed, count: Self.slotCount)], slot.key == key else { return nil }
        return slot.id
    }

    mutating func remember(_ id: SessionID, for key: SessionCookieKey) {
        slots[key.slotIndex(seed: seed, count: Self.slotCount)] = Slot(key: key, id: id)
    }

    /// The remembered bearer of `key` when `isUsable` accepts it; read in place (no copy of the slot,
    /// whose strings would be retained and released for nothing).
    func bearer(for key: SessionCookieKey, _ isUsable: (borrowing LoopBearer) -> Bool) -> String? {
        slots.withUnsafeBufferPointer { slots in
            guard let slot = slots[key.slotIndex(seed: seed, count: Self.slotCount)], slot.key == key,
                  let bearer = slot.bearer, isUsable(bearer) else { return nil }
            return bearer.authorization
        }
    }

    /// Keeps `bearer` with the value's id; nothing when the value is no longer remembered (its slot
    /// was taken by another value meanwhile).
    mutating func remember(_ bearer: LoopBearer, for key: SessionCookieKey) {
        let index = key.slotIndex(seed: seed, count: Self.slotCount)
        guard slots[index]?.key == key else { return }
        slots[index]?.bearer = bearer
    }
}

/// What the proxy reads of a cached session, copied for one event loop (`SessionCache.cachedBearer`):
/// the loops then share no reference count, lock or string on a proxied request's way, where each
/// shared one moved a cache line between cores on every request.
struct LoopBearer {
    /// `SessionCache`'s generation when copied: any session changed or ended in this process since
    /// then makes every copy stale at once.
    let generation: UInt64
    /// The shared entry's load time: a copy lives no longer than the entry it came from.
    let loadedAt: UInt64
    /// The idle expiry as slid by the request that made the copy (a later second slides it again,
    /// through the shared entry).
    let idleExpiresAt: Int64
    /// The session's absolute expiry.
    let expiresAt: Int64
    /// The first second at which the access token has ended or is due for a refresh.
    let usableBefore: Int64
    /// `Bearer <access token>`, in storage of this loop's own.
    let authorization: String
    /// The ids of the configured `allow=` rules the session satisfies (`AccessRule.id`), decided
    /// when the copy was made: a route's rule then costs the loop no lock and no shared object.
    let allowedRules: [Int]
}

/// A well-formed session cookie value (43 bytes of base64url) as six machine words: the key of the
/// session cache's memo of recent cookie values.
///
/// Hashing a `Substring` key checks whether the text is normalised and feeds it to the hasher
/// through a generic path (about 400 instructions a lookup); six words go to the same seeded
/// hasher whole. Every byte is hashed: the values are whatever clients send (well-formed, but
/// chosen by them), so the seeded hash is what keeps them from piling up in one bucket.
struct SessionCookieKey: Hashable, Sendable {
    private let words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    /// Nil unless `value` is exactly `SessionID.cookieValueLength` (43) bytes long (the six words
    /// hold 48).
    init?(_ value: UnsafeBufferPointer<UInt8>) {
        guard value.count == SessionID.cookieValueLength else { return nil }
        var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(value)) }
        self.words = words
    }

    static func == (a: SessionCookieKey, b: SessionCookieKey) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2
            && a.words.3 == b.words.3 && a.words.4 == b.words.4 && a.words.5 == b.words.5
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
        hasher.combine(words.4)
        hasher.combine(words.5)
    }

    /// The key as one word (its bytes are the cookie's random value), for admission shares.
    var admissionHash: UInt64 { words.0 ^ words.1 ^ words.2 ^ words.3 ^ words.4 ^ words.5 }

    /// A slot of a direct-mapped table of `count` slots (a power of two): every word mixed in by
    /// multiplication with `seed` (odd), the top bits taken.
    func slotIndex(seed: UInt64, count: Int) -> Int {
        var mixed = words.0 &* seed
        mixed = (mixed ^ words.1) &* seed
        mixed = (mixed ^ words.2) &* seed
        mixed = (mixed ^ words.3) &* seed
        mixed = (mixed ^ words.4) &* seed
        mixed = (mixed ^ words.5) &* seed
        mixed ^= mixed >> 29
        return Int(truncatingIfNeeded: mixed) & (count - 1)
    }
}
