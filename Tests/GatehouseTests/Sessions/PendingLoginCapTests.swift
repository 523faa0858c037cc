import Foundation
import GatehouseSessions
import Testing

/// A fresh store of `kind` with `limits`, and a way to count its pending-login rows.
private func withCappedStore(_ kind: StoreKind, _ limits: PendingLoginLimits,
                             _ body: (any SessionStore, () throws -> Int) throws -> Void) throws {
    switch kind {
    case .inMemory:
        let store = InMemorySessionStore(pendingLoginLimits: limits)
        try body(store) { store.pendingLoginCount() }
    case .sqlite:
        try withTemporaryDirectory { dir in
            let store = try SQLiteSessionStore(path: dir + "/sessions.sqlite", sealer: try testSealer(),
                                               logger: quietLogger, pendingLoginLimits: limits)
            try store.migrate()
            defer { try? store.close() }
            try body(store) { try store.pendingLoginCount() }
        }
    case .postgres, .pgbouncer:
        let store = PostgresSessionStore(pool: PostgresConnectionPool(uri: try freshPostgresDatabase(throughPgBouncer: kind == .pgbouncer)),
                                         sealer: try testSealer(), logger: quietLogger, pendingLoginLimits: limits)
        try store.migrate()
        defer { try? store.close() }
        try body(store) { try store.pendingLoginCount() }
    }
}

extension PendingLogin {
    /// A pending login of the browser whose binding cookie is `binding`.
    static func make(binding: String, now: Int64, state: String = "state-\(UUID().uuidString)") -> PendingLogin {
        var login = PendingLogin.make(state: state, now: now)
        login.bindingHash = SecretHash.hex(of: binding)
        return login
    }
}

/// Issue 10, item 6: `GET /login` is unauthenticated, so the pending logins it stores are capped per
/// browser binding and in total, the surplus evicted by the insert itself.
@Suite("Pending-login caps")
struct PendingLoginCapTests {
    let t0: Int64 = 1_000_000

    @Test("One browser keeps at most perBinding pending logins; its oldest is evicted", arguments: StoreKind.allCases)
    func perBindingCap(kind: StoreKind) throws {
        try withCappedStore(kind, PendingLoginLimits(perBinding: 3, total: 100)) { store, count in
            let logins = (0..<5).map { PendingLogin.make(binding: "tabs", now: t0 + Int64($0)) }
            for login in logins { try store.savePendingLogin(login) }
            let other = PendingLogin.make(binding: "another-browser", now: t0)
            try store.savePendingLogin(other)
            #expect(try count() == 4, "3 of the flooding browser, 1 of the other")
            #expect(try store.takePendingLogin(stateHash: logins[0].stateHash, now: t0 + 10) == nil, "oldest evicted")
            #expect(try store.takePendingLogin(stateHash: logins[1].stateHash, now: t0 + 10) == nil)
            for login in logins[2...] {
                #expect(try store.takePendingLogin(stateHash: login.stateHash, now: t0 + 10) == login)
            }
            #expect(try store.takePendingLogin(stateHash: other.stateHash, now: t0 + 10) == other,
                    "another browser's login is untouched")
        }
    }

    @Test("Logins started in the same second are evicted in the order they were started", arguments: StoreKind.allCases)
    func sameSecondOrder(kind: StoreKind) throws {
        try withCappedStore(kind, PendingLoginLimits(perBinding: 2, total: 100)) { store, _ in
            let logins = (0..<3).map { _ in PendingLogin.make(binding: "tabs", now: t0) }
            for login in logins { try store.savePendingLogin(login) }
            #expect(try store.takePendingLogin(stateHash: logins[0].stateHash, now: t0) == nil)
            #expect(try store.takePendingLogin(stateHash: logins[1].stateHash, now: t0) != nil)
            #expect(try store.takePendingLogin(stateHash: logins[2].stateHash, now: t0) != nil)
        }
    }

    @Test("Fresh browsers flooding /login never grow the store past total; expired rows go first, then the oldest",
          arguments: StoreKind.allCases)
    func totalCap(kind: StoreKind) throws {
        try withCappedStore(kind, PendingLoginLimits(perBinding: 2, total: 5)) { store, count in
            let expired = PendingLogin.make(binding: "long-gone", now: t0 - 1_000)
            try store.savePendingLogin(expired)
            var flood: [PendingLogin] = []
            for i in 0..<20 {
                let login = PendingLogin.make(binding: "fresh-\(i)", now: t0 + Int64(i))
                try store.savePendingLogin(login)
                flood.append(login)
                #expect(try count() <= 5)
            }
            #expect(try count() == 5)
            for login in flood[..<15] {
                #expect(try store.takePendingLogin(stateHash: login.stateHash, now: t0 + 30) == nil)
            }
            for login in flood[15...] {
                #expect(try store.takePendingLogin(stateHash: login.stateHash, now: t0 + 30) == login)
            }
        }
    }

    @Test("The standard caps hold in SQLite under a flood of 10,050 logins from fresh browsers")
    func standardCapsInSQLite() throws {
        #expect(PendingLoginLimits.standard == PendingLoginLimits(perBinding: 10, total: 10_000))
        try withCappedStore(.sqlite, .standard) { store, count in
            let overflow = 50
            var first: PendingLogin? = nil
            for i in 0..<(PendingLoginLimits.standard.total + overflow) {
                let login = PendingLogin.make(binding: "fresh-\(i)", now: t0 + Int64(i / 100), state: "flood-\(i)")
                if first == nil { first = login }
                try store.savePendingLogin(login)
            }
            #expect(try count() == PendingLoginLimits.standard.total)
            let oldest = try #require(first)
            #expect(try store.takePendingLogin(stateHash: oldest.stateHash, now: t0 + 200) == nil)
        }
    }
}
