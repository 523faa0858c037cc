import Logging

/// A session row as every engine stores it: clocks and version in the clear, tokens and claims
/// sealed. Reading it from a result and turning it back into a `Session` is the same for every
/// engine, so both are here, once.
struct StoredSessionRow: Sendable {
    let sub: String
    let sid: String?
    let createdAt: Int64
    let lastSeenAt: Int64
    let idleExpiresAt: Int64
    let expiresAt: Int64
    let sealed: [UInt8]
    let version: Int64
    let provider: String

    func isActive(at now: Int64) -> Bool {
        SessionLifetime.isActive(idleExpiresAt: idleExpiresAt, expiresAt: expiresAt, now: now)
    }

    /// The session, or nil (logged) when its sealed part cannot be opened with the configured keys.
    /// The row is not deleted: if the operator restores the right key, the session works again.
    func session(idHash: String, sealer: TokenSealer, logger: Logger) -> Session? {
        let opened = openedOrLogged("stored session", key: "session.id_prefix", hash: idHash, logger: logger) {
            () throws(SessionStoreError) in try SessionSecrets.opened(sealed, idHash: idHash, sealer: sealer)
        }
        guard let secrets = opened else { return nil }
        return Session(idHash: idHash, sub: sub, sid: sid, claims: Array(secrets.claims),
                       tokens: secrets.tokens, createdAt: createdAt, lastSeenAt: lastSeenAt,
                       idleExpiresAt: idleExpiresAt, expiresAt: expiresAt, version: version, provider: provider)
    }
}

extension StoredSessionRow {
    /// A row of `SessionStatement.selectSession`.
    init<Row: SessionRow>(_ row: Row) throws(Row.Failure) {
        self.init(sub: try row.requiredString(0), sid: row.string(1), createdAt: row.int64(2), lastSeenAt: row.int64(3),
                  idleExpiresAt: row.int64(4), expiresAt: row.int64(5), sealed: try row.requiredBytes(6),
                  version: row.int64(7), provider: row.string(8) ?? "default")
    }
}

/// A pending-login row as every engine stores it (the verifier, nonce and return path sealed).
struct StoredPendingRow: Sendable {
    let bindingHash: String
    let sealed: [UInt8]
    let createdAt: Int64
    let expiresAt: Int64

    /// The pending login, or nil when it expired at `now` or cannot be opened (logged).
    func pendingLogin(stateHash: String, now: Int64, sealer: TokenSealer, logger: Logger) -> PendingLogin? {
        guard now < expiresAt else { return nil }
        let opened = openedOrLogged("stored pending login", key: "oauth.state_hash_prefix", hash: stateHash, logger: logger) {
            () throws(SessionStoreError) in try PendingLoginSecrets.opened(sealed, stateHash: stateHash, sealer: sealer)
        }
        guard let secrets = opened else { return nil }
        var login = PendingLogin(stateHash: stateHash, bindingHash: bindingHash, codeVerifier: secrets.codeVerifier,
                                 nonce: secrets.nonce, returnTo: secrets.returnTo,
                                 createdAt: createdAt, expiresAt: expiresAt)
        login.provider = secrets.provider ?? PendingLogin.defaultProvider
        login.requiredClaims = secrets.requiredClaims ?? [:]
        login.acrValues = secrets.acrValues ?? []
        login.maxAge = secrets.maxAge
        login.requestObject = secrets.requestObject
        return login
    }
}

extension StoredPendingRow {
    /// A row `SessionStatement.takePending` or `.selectPending` returns.
    init<Row: SessionRow>(taken row: Row) throws(Row.Failure) {
        self.init(bindingHash: try row.requiredString(0), sealed: try row.requiredBytes(1),
                  createdAt: row.int64(2), expiresAt: row.int64(3))
    }
}

/// What `open` returns, or nil after logging (with the first 8 characters of the row's hash) that the
/// stored value cannot be opened with the configured keys.
private func openedOrLogged<T>(_ what: String, key: String, hash: String, logger: Logger,
                               _ open: () throws(SessionStoreError) -> T) -> T? {
    do {
        return try open()
    } catch {
        logger.warning("\(what) cannot be opened; treating it as absent", metadata: [
            key: "\(hash.prefix(8))", "error": "\(error)",
        ])
        return nil
    }
}

/// A session's sealed part and version, read back when a token update keeps the stored claims.
struct SealedVersion: Sendable {
    let sealed: [UInt8]
    let version: Int64

    /// A row of `SessionStatement.selectSealed`.
    init<Row: SessionRow>(_ row: Row) throws(Row.Failure) {
        sealed = try row.requiredBytes(0)
        version = row.int64(1)
    }
}

extension SessionSummary {
    /// A row of `SessionStatement.listActive`.
    init<Row: SessionRow>(_ row: Row) throws(Row.Failure) {
        self.init(idPrefix: try row.requiredString(0), sub: try row.requiredString(1),
                  createdAt: row.int64(2), lastSeenAt: row.int64(3),
                  idleExpiresAt: row.int64(4), expiresAt: row.int64(5), provider: row.string(6) ?? "default")
    }
}

extension SessionSecrets {
    /// The sealed value a token update writes: the new tokens with `claims`, or — when nil — the
    /// claims stored at `expectedVersion` (read with `current`). Nil when the session is gone or
    /// no longer at `expectedVersion`, so the update can only lose.
    static func resealed(tokens: TokenSet, claims: [UInt8]?, idHash: String, expectedVersion: Int64, sealer: TokenSealer,
                         current: () throws(SessionStoreError) -> SealedVersion?) throws(SessionStoreError) -> [UInt8]? {
        let keptClaims: [UInt8]
        if let claims {
            keptClaims = claims
        } else {
            // Claims live in the same sealed blob: read them back to re-seal with the new tokens.
            guard let stored = try current(), stored.version == expectedVersion else { return nil }
            keptClaims = Array(try SessionSecrets.opened(stored.sealed, idHash: idHash, sealer: sealer).claims)
        }
        return try SessionSecrets.sealed(tokens: tokens, claims: keptClaims, idHash: idHash, sealer: sealer)
    }
}
