import FoundationEssentials
import GatehouseCore
import GatehouseSessions
import GatehouseTime
import EventLoops
import HTTP1
import Logging
import Synchronization

/// The one door to sessions: a caching decorator over the store. Endpoints, the proxy and the token
/// refresher reach sessions, pending logins and the logout replay cache only through it, so that
/// deleting a session always drops it from the cache too (`endSession`, `endSessions`).
///
/// It finds the session behind a request's cookie, with a short-lived in-memory cache so the proxy's
/// hot path does not read SQLite on every request.
///
/// Cache entries live at most `maximumAge` (0.5 s): a session revoked by the CLI, another process or
/// back-channel logout is refused within a second. Sliding the idle timeout happens in memory on every
/// request and is written to the database at most once per `touchInterval` per session (a minute, or
/// less for short idle timeouts), so steady traffic costs no SQLite writes.
///
/// Every store call runs on the `StoreExecutor`'s threads, never on an event loop: a cache hit is
/// answered synchronously without suspending; a miss, and every write, is awaited (bounded by the
/// executor's timeout) and the caller resumes on its own loop.
public final class SessionCache: Sendable {
    struct Entry {
        /// The session as loaded (or as this process last changed it), shared by reference.
        var cached: CachedSession
        var loadedAt: UInt64
        /// Idle expiry as slid in memory (≥ the stored one).
        var idleExpiresAt: Int64
        var persistedIdleExpiresAt: Int64
    }

    /// A session found for the proxy, with the `Authorization` value for its access token.
    ///
    /// It refers to the cached session instead of holding a copy: a proxied request reads its
    /// tokens and that one header value, and copying the whole session (a dozen strings and
    /// arrays, each retained and released) cost more than the rest of the session work.
    public struct Resolved: Sendable {
        let cached: CachedSession
        /// The idle expiry as slid by this request.
        public let idleExpiresAt: Int64
        /// When the cached entry was loaded (the monotonic clock).
        let loadedAt: UInt64

        /// The session, with the idle expiry slid by this request.
        public var session: Session {
            var session = cached.session
            session.idleExpiresAt = idleExpiresAt
            return session
        }

        public var tokens: TokenSet { cached.session.tokens }
        /// `Bearer <access token>`, built once per loaded session instead of once per request.
        public var authorization: String { cached.authorization }
    }

    let store: any SessionStore
    /// Where store calls run (off the event loops).
    public let executor: StoreExecutor
    let cookieName: String
    let idleSeconds: Int64
    let touchInterval: Int64
    let maximumAgeNanoseconds: UInt64 = 500_000_000
    static let maximumEntries = 100_000
    let cache = Mutex<[SessionHashKey: Entry]>([:])
    /// Bumped whenever this process changes or ends a session (or empties the cache): the event
    /// loops' copies (`LoopBearer`) made before are no longer used.
    let generation = Atomic<UInt64>(0)
    let logger: Logger
    /// The gateway's clock: unix seconds for checking several cookie values, the monotonic reading
    /// for the age of cached entries.
    let clock: any GatewayClock

    /// SQLite: the endings written by every process on the same database file (other instances,
    /// `gatehouse sessions revoke`); nil on PostgreSQL, whose listener tells the same.
    let endBoard: SQLiteSessionEndBoard?
    /// The end board, for the session cache of a reloaded configuration (one board per database).
    var sharedEndBoard: SQLiteSessionEndBoard? { endBoard }
    /// The board's entries read so far: while it equals the board's head, a request pays one load.
    let endBoardSeen: Atomic<UInt64>
    let endBoardReader = Mutex(EndBoardReader())

    /// Told about every session this process ends (its id hash; nil when several unknown ones
    /// ended), so the WebSockets of the session close at once.
    let endObservers = Mutex<[@Sendable (String?) -> Void]>([])

    /// Adds an observer of ended sessions (see `endObservers`).
    public func onSessionEnded(_ observer: @escaping @Sendable (String?) -> Void) {
        endObservers.withLock { $0.append(observer) }
    }

    func notifyEnded(_ idHash: String?) {
        for observer in endObservers.withLock({ $0 }) { observer(idHash) }
    }

    /// PostgreSQL: waits, after each ending, until every instance has been told (`SessionEndBarrier`).
    let endBarrier = Mutex<SessionEndBarrier?>(nil)

    func attach(_ barrier: SessionEndBarrier) {
        endBarrier.withLock { $0 = barrier }
    }

    func everyInstanceTold() async {
        await endBarrier.withLock { $0 }?.pass()
    }

    /// A session ended by another instance or command (PostgreSQL's announcement); nil when some
    /// may have been missed (the listener reconnected): every cached session is dropped.
    func endedElsewhere(_ idHash: String?) {
        if let idHash {
            forget(idHash)
        } else {
            forgetAll()
        }
        notifyEnded(idHash)
    }

    /// Off: no per-loop copies (`SessionIDMemo`, `LoopBearer`); every request reads the shared entry.
    let speedLayer: SpeedLayer
    /// The providers sessions may belong to: a session of a provider taken out of the configuration
    /// could be neither refreshed, revoked nor ended by its provider's back-channel logout, so it ends
    /// when it is read. By name, each one's issuer: a session whose tokens came from another issuer
    /// (the name re-pointed, or `GATEHOUSE_ISSUER` changed, on the same database) ends too.
    let configuredProviders: [String: String]
    /// Every route's `allow=` rule and each provider's groups claim: a loop's copy of a session's
    /// bearer carries the rules the session satisfies (`LoopBearer.allowedRules`).
    let accessRules: [AccessRule]
    let groupsClaims: [String: String]

    public init(store: any SessionStore, configuration: GatehouseConfiguration, logger: Logger,
                executor: StoreExecutor = StoreExecutor(),
                clock: any GatewayClock = SystemClock(), speedLayer: SpeedLayer = SpeedLayer(),
                endBoard: SQLiteSessionEndBoard? = nil) {
        self.store = store
        self.endBoard = endBoard
        endBoardSeen = Atomic(endBoard?.head ?? 0)
        self.speedLayer = speedLayer
        self.executor = executor
        self.clock = clock
        cookieName = configuration.cookieName
        accessRules = configuration.routes.compactMap(\.allow)
        groupsClaims = Dictionary(configuration.providers.map { ($0.name, $0.groupsClaim) }, uniquingKeysWith: { first, _ in first })
        configuredProviders = Dictionary(configuration.providers.map { ($0.name, $0.issuer) }, uniquingKeysWith: { first, _ in first })
        idleSeconds = Int64(configuration.sessionIdle)
        touchInterval = max(1, min(60, Int64(configuration.sessionIdle) / 4))
        self.logger = logger
    }

    /// The active session for `idHash`, sliding its idle timeout unless `slide` is false.
    /// Returns nil when it does not exist or has expired.
    public func resolve(idHash: String, now: Int64, slide: Bool = true) async throws(SessionStoreError) -> Session? {
        try await resolveWithAuthorization(idHash: idHash, now: now, slide: slide)?.session
    }

    /// As `resolve`, with the session's `Authorization` header value (cached with the session).
    public func resolveWithAuthorization(idHash: String, now: Int64, slide: Bool = true) async throws(SessionStoreError) -> Resolved? {
        catchUpWithOtherProcesses()
        // Another loop may have loaded the entry a moment after `clock` was read: a load "in the
        // future" is fresh, not expired.
        let clock = self.clock.monotonicNanoseconds()
        let entry: Entry
        let loadedNow: Bool
        var generationBefore: UInt64? = nil
        if let cached = cache.withLock({ $0[SessionHashKey(idHash)] }), clock < cached.loadedAt || clock - cached.loadedAt < maximumAgeNanoseconds {
            // The hot path: no suspension, no store call.
            entry = cached
            loadedNow = false
        } else {
            // Taken before the read: an ending of any session while it runs (a logout, here or by
            // back-channel) keeps the loaded row out of the cache (`settle`), so a read that began
            // before a delete cannot put the session back for the entry's lifetime.
            let before = generation.load(ordering: .acquiring)
            generationBefore = before
            guard let loaded = try await loadOnce(idHash: idHash, now: now, generation: before).map(withHeld) else {
                _ = cache.withLock { $0.removeValue(forKey: SessionHashKey(idHash)) }
                return nil
            }
            guard let issuer = configuredProviders[loaded.provider] else {
                await dropEnded(idHash: idHash, reason: "its provider \(loaded.provider) is no longer configured")
                return nil
            }
            if let began = loaded.tokens.issuer, began != issuer {
                await dropEnded(idHash: idHash, reason: "its provider \(loaded.provider) now names another issuer")
                return nil
            }
            let previous = cache.withLock { $0[SessionHashKey(idHash)] }
            let slid = max(loaded.idleExpiresAt, previous?.idleExpiresAt ?? 0)
            entry = Entry(cached: CachedSession(loaded), loadedAt: self.clock.monotonicNanoseconds(),
                          idleExpiresAt: min(slid, loaded.expiresAt), persistedIdleExpiresAt: loaded.idleExpiresAt)
            loadedNow = true
        }
        if let resolved = settle(entry, idHash: idHash, now: now, slide: slide, changed: loadedNow,
                                 loadedAtGeneration: generationBefore) {
            return resolved
        }
        await dropEnded(idHash: idHash, reason: "expired")
        return nil
    }

    /// Slides the idle timeout of a cached or freshly loaded entry, synchronously; nil when it has
    /// expired (the caller then ends it). An entry loaded from the store is cached only while no
    /// session has changed or ended since `loadedAtGeneration` (taken before the read).
    func settle(_ entry: Entry, idHash: String, now: Int64, slide: Bool, changed: Bool,
                        loadedAtGeneration: UInt64? = nil) -> Resolved? {
        var entry = entry
        var changed = changed
        let expiresAt = entry.cached.session.expiresAt
        guard now < entry.idleExpiresAt, now < expiresAt else { return nil }
        if slide {
            let slid = SessionLifetime.idleExpiry(slidAt: now, idleSeconds: idleSeconds, expiresAt: expiresAt)
            if slid != entry.idleExpiresAt { changed = true }
            entry.idleExpiresAt = slid
            // Persist the slide at most once per interval (the hot path stays write-free), without
            // waiting for it: the slide already holds in memory, and a failed write only means the
            // stored idle expiry lags until the next interval.
            if entry.idleExpiresAt - entry.persistedIdleExpiresAt >= touchInterval {
                let store = self.store, idleExpiresAt = entry.idleExpiresAt
                executor.submit { _ = try? store.touch(idHash: idHash, lastSeen: now, idleExpiresAt: idleExpiresAt) }
                entry.persistedIdleExpiresAt = entry.idleExpiresAt
            }
        }
        let resolved = Resolved(cached: entry.cached, idleExpiresAt: entry.idleExpiresAt, loadedAt: entry.loadedAt)
        // Within the same second a cached entry is unchanged: skip the second lock and copy.
        guard changed else { return resolved }
        let stored = entry
        cache.withLock { cache in
            // Checked under the lock that `forget` bumps the generation under: no ending slips
            // between the check and the write.
            if let loadedAtGeneration, generation.load(ordering: .acquiring) != loadedAtGeneration { return }
            // Bounded: entries are only a 0.5 s shortcut, so dropping them all costs one read each.
            let key = SessionHashKey(idHash)
            if cache.count >= Self.maximumEntries && cache[key] == nil { cache.removeAll(keepingCapacity: true) }
            cache[key] = stored
        }
        return resolved
    }

    /// Replaces the cached copy after this process changed the session (new tokens).
    func update(_ session: Session) {
        cache.withLock { cache in
            generation.add(1, ordering: .releasing)
            let key = SessionHashKey(session.idHash)
            guard var entry = cache[key] else { return }
            entry.cached = CachedSession(session)
            entry.loadedAt = clock.monotonicNanoseconds()
            cache[key] = entry
        }
    }

    /// Drops the cached copy. The generation moves under the cache's lock, so neither a loop's
    /// bearer copy nor a refill that read the store before this (`settle`) outlives it.
    func forget(_ idHash: String) {
        cache.withLock { cache in
            generation.add(1, ordering: .releasing)
            cache.removeValue(forKey: SessionHashKey(idHash))
        }
    }

    // Stored here for the extensions in SessionCache+Store.swift (held tokens, single-flight reads).
    let held = Mutex<[SessionHashKey: HeldTokens]>([:])

    /// Store reads under way, by session: the requests that miss the cache for the same session
    /// at once (every connection of a busy browser when its entry ages out) share one read.
    let loading = SingleFlight<SessionHashKey, Result<Session?, SessionStoreError>>()
}

/// Where `SessionCache` is in reading the SQLite end board (under its lock).
struct EndBoardReader {
    /// An entry found still being written, and since when (the monotonic clock).
    var stuckAt: UInt64?
    var stuckSince: UInt64 = 0
}

