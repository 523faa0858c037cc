import FoundationEssentials
import GatehouseCore
import GatehouseSessions
import GatehouseTime
import EventLoops
import HTTP1
import Logging
import Synchronization

/// Ending sessions: the only place that deletes one (delete, then forget), and how the other
/// instances and processes on the same store hear of it (the end board, the end barrier).
extension SessionCache {
    // MARK: Ending sessions (delete, then forget: the only place that deletes a session)

    /// Deletes the session and drops its cached copy (logout, revocation).
    ///
    /// - Throws: the store's error when the row could not be deleted: the ending did not happen and
    ///   must not be reported (a logout answered as done during an outage would leave a stolen cookie
    ///   working once the store is back). The cached copy is dropped either way, so until the store
    ///   answers again the session is not served from memory either.
    public func endSession(idHash: String) async throws(SessionStoreError) {
        try await endSession(idHash: idHash, tellingEveryInstance: true)
    }

    /// - Parameter tellingEveryInstance: wait until every instance has been told (a logout, a
    ///   revocation); not for a session every instance refuses by itself anyway (`dropEnded`).
    func endSession(idHash: String, tellingEveryInstance: Bool) async throws(SessionStoreError) {
        do {
            _ = try await onStore { store throws(SessionStoreError) in try store.deleteSession(idHash: idHash) }
        } catch {
            forget(idHash)
            throw error
        }
        _ = held.withLock { $0.removeValue(forKey: SessionHashKey(idHash)) }
        forget(idHash)
        announceEnded(idHash)
        if tellingEveryInstance { await everyInstanceTold() }
    }

    /// Ends a session that can no longer be used whether or not its row goes now: its idle or
    /// absolute expiry passed, its access token expired without a refresh token, or the provider
    /// refused its refresh token. Loading it again finds it expired (or its refresh refused again),
    /// so a failed delete revives nothing; it is logged, and the row expires or is purged later.
    /// Every instance finds the same (expired, or its refresh refused), so the request that found it
    /// does not wait for the others to be told.
    func dropEnded(idHash: String, reason: String) async {
        do {
            try await endSession(idHash: idHash, tellingEveryInstance: false)
        } catch {
            logger.warning("ended session not deleted from the store",
                           metadata: ["session.id": "\(idHash.prefix(8))", "reason": "\(reason)", "error": "\(error)"])
        }
    }

    /// Records a back-channel logout token's `jti` and deletes the sessions it names, in one store
    /// transaction, then empties the cache (keyed by id hash, it cannot tell which entries matched).
    /// - Returns: how many sessions ended, or nil when the `jti` was seen before (a replay).
    /// - Throws: when the store failed: then neither the `jti` nor any deletion was recorded, and the
    ///   provider's retry of the same token is honoured.
    public func endSessions(forLogoutToken jti: String, expiresAt: Int64,
                            matching match: LogoutTokenMatch) async throws(SessionStoreError) -> Int? {
        let ended = try await onStore { store throws(SessionStoreError) in
            try store.endSessions(forLogoutToken: jti, expiresAt: expiresAt, matching: match)
        }
        guard let ended else { return nil }
        forgetAll()
        announceEnded(nil)
        await everyInstanceTold()
        return ended
    }

    /// Deletes the sessions of `provider` whose provider session is `sid` (front-channel logout),
    /// and empties the cache, as above.
    public func endSessions(sid: String, provider: String) async throws(SessionStoreError) -> Int {
        let ended = try await onStore { store throws(SessionStoreError) in try store.deleteSessions(sid: sid, provider: provider) }
        forgetAll()
        announceEnded(nil)
        await everyInstanceTold()
        return ended
    }

    /// Deletes every session of the user `sub` (and empties the cache, as above).
    public func endSessions(sub: String) async throws(SessionStoreError) -> Int {
        let ended = try await onStore { store throws(SessionStoreError) in try store.deleteSessions(sub: sub) }
        forgetAll()
        announceEnded(nil)
        await everyInstanceTold()
        return ended
    }

    /// Deletes every session of `sub` at `provider` ("sign out everywhere"); the sessions as they
    /// were (their refresh tokens to revoke), read before the delete.
    public func endSessions(sub: String, provider: String, now: Int64) async throws(SessionStoreError) -> [Session] {
        let ended = try await onStore { store throws(SessionStoreError) -> [Session] in
            let listed = try store.listSessions(sub: sub, provider: provider, now: now)
            var sessions: [Session] = []
            for entry in listed.prefix(1_000) {
                if let session = try store.loadSession(idHash: entry.idHash, now: now) { sessions.append(session) }
            }
            _ = try store.deleteSessions(sub: sub, provider: provider)
            return sessions
        }
        forgetAll()
        announceEnded(nil)
        await everyInstanceTold()
        return ended
    }

    /// The user's active sessions ("my sessions").
    public func listSessions(sub: String, provider: String, now: Int64) async throws(SessionStoreError) -> [UserSession] {
        try await onStore { store throws(SessionStoreError) in try store.listSessions(sub: sub, provider: provider, now: now) }
    }

    /// Ends the session with `handle` when it is the user's; its id hash, or nil when the user has
    /// no session with that handle (another user's handle among them).
    public func endSession(handle: String, sub: String, provider: String) async throws(SessionStoreError) -> String? {
        let ended = try await onStore { store throws(SessionStoreError) in
            try store.deleteSession(handle: handle, sub: sub, provider: provider)
        }
        guard let ended else { return nil }
        _ = held.withLock { $0.removeValue(forKey: SessionHashKey(ended)) }
        forget(ended)
        announceEnded(ended)
        await everyInstanceTold()
        return ended
    }

    /// A session this process ended (nil: several, unnamed): told to this process's observers and,
    /// on SQLite, to the other processes on the file. Every ending here goes through it.
    func announceEnded(_ idHash: String?) {
        notifyEnded(idHash)
        tellOtherProcesses(idHash.map { .session($0) } ?? .unknown)
    }

    /// SQLite: writes an ending of this process on the board, for the others. Reading it back
    /// here forgets again what is already forgotten.
    func tellOtherProcesses(_ ended: SQLiteSessionEndBoard.Ended) {
        endBoard?.publish(ended)
    }

    /// SQLite: forgets the sessions other processes ended since the last request looked. One
    /// atomic load when nothing is new.
    @inline(__always)
    func catchUpWithOtherProcesses() {
        guard let endBoard else { return }
        let head = endBoard.head
        if head != endBoardSeen.load(ordering: .acquiring) { readEndBoard(endBoard, head: head) }
    }

    func readEndBoard(_ board: SQLiteSessionEndBoard, head: UInt64) {
        let clock = self.clock.monotonicNanoseconds()
        let ended = endBoardReader.withLock { reader -> [SQLiteSessionEndBoard.Ended] in
            let seen = endBoardSeen.load(ordering: .acquiring)
            guard head > seen else { return [] }  // another loop read them
            var (entries, next) = board.entries(after: seen, upTo: head)
            if next < head {
                // An entry still being written. Its writer answers only after finishing it, so no
                // request can need it yet; but a writer that died mid-entry would send every later
                // request here: after a second it counts as unknown.
                if reader.stuckAt != next {
                    reader.stuckAt = next
                    reader.stuckSince = clock
                } else if clock &- reader.stuckSince > 1_000_000_000 {
                    entries.append((next, .unknown))
                    next = head
                }
            }
            if next == head { reader.stuckAt = nil }
            endBoardSeen.store(next, ordering: .releasing)
            return entries.map(\.ended)
        }
        for entry in ended {
            switch entry {
            case .session(let idHash):
                forget(idHash)
                notifyEnded(idHash)
            case .unknown:
                forgetAll()
                notifyEnded(nil)
            }
        }
    }

    /// Every cached session dropped (the cache of a configuration a reload replaced).
    func forgetEverything() { forgetAll() }

    func forgetAll() {
        cache.withLock { cache in
            generation.add(1, ordering: .releasing)
            cache.removeAll()
        }
    }
}
