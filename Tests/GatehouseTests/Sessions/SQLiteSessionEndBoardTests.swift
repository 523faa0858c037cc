import Foundation
import GatehouseCore
import GatehouseSessions
import Glibc
import Logging
import Testing
import TestSupport
@testable import Gatehouse

/// The end board beside a SQLite database: how several processes on one file learn of each other's
/// endings before their next request (SPEC "Sessions the SPA controls").
@Suite("Sessions: the SQLite end board shared by processes")
struct SQLiteSessionEndBoardTests {
    let now: Int64 = 1_000_000
    static let hashA = String(repeating: "a", count: 64)
    static let hashB = String(repeating: "b", count: 64)

    @Test("An entry written through one mapping is read through another (another process's) in order")
    func publishAndRead() throws {
        try withTemporaryDirectory { dir in
            let writer = try #require(SQLiteSessionEndBoard(databasePath: dir + "/g.sqlite"))
            let reader = try #require(SQLiteSessionEndBoard(databasePath: dir + "/g.sqlite"))
            #expect(reader.head == 0)
            #expect(writer.publish(.session(Self.hashA)) == 0)
            #expect(writer.publish(.unknown) == 1)
            #expect(writer.publish(.session(Self.hashB)) == 2)
            #expect(reader.head == 3)
            let (entries, next) = reader.entries(after: 0, upTo: reader.head)
            #expect(entries.map(\.number) == [0, 1, 2])
            #expect(entries.map(\.ended) == [.session(Self.hashA), .unknown, .session(Self.hashB)])
            #expect(next == 3)
            #expect(reader.entries(after: 1, upTo: 3).ended.map(\.ended) == [.unknown, .session(Self.hashB)])
            // The file is the operator's to see: beside the database, owner-only.
            var status = stat()
            #expect(stat(dir + "/g.sqlite-ends", &status) == 0)
            #expect(status.st_mode & 0o777 == 0o600)
        }
    }

    @Test("A reader more than a whole board behind is told unknown (forget everything), not wrong hashes")
    func lapped() throws {
        try withTemporaryDirectory { dir in
            let board = try #require(SQLiteSessionEndBoard(databasePath: dir + "/g.sqlite"))
            for _ in 0..<(SQLiteSessionEndBoard.capacity + 5) { board.publish(.session(Self.hashA)) }
            let (entries, next) = board.entries(after: 0, upTo: board.head)
            #expect(entries.map(\.ended) == [.unknown])
            #expect(next == board.head)
        }
    }

    @Test("An entry still being written holds the reader there, and the entries after it are read anyway")
    func entryBeingWritten() throws {
        try withTemporaryDirectory { dir in
            let board = try #require(SQLiteSessionEndBoard(databasePath: dir + "/g.sqlite"))
            for hash in [Self.hashA, Self.hashB, Self.hashA] { board.publish(.session(hash)) }
            // Entry 1's sequence zeroed, as its writer does first (through the file, as another
            // process's mapping would see it).
            let fd = open(board.path, O_RDWR)
            defer { close(fd) }
            var zero: UInt64 = 0
            let offset = off_t(SQLiteSessionEndBoard.headerBytes + 1 * SQLiteSessionEndBoard.slotBytes)
            #expect(pwrite(fd, &zero, 8, offset) == 8)
            let (entries, next) = board.entries(after: 0, upTo: 3)
            #expect(entries.map(\.number) == [0, 2])
            #expect(next == 1)
        }
    }

    static func cache(over store: any SessionStore, board: SQLiteSessionEndBoard?, clock: ManualClock) throws -> SessionCache {
        let configuration = try GatehouseConfiguration.load(environment: [
            "GATEHOUSE_ISSUER": "http://127.0.0.1:9", "GATEHOUSE_CLIENT_ID": "c",
            "GATEHOUSE_SECRET_KEY": GatewayHarness.randomBase64(),
        ], requireSecretKey: true).get()
        return SessionCache(store: store, configuration: configuration,
                            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }, clock: clock, endBoard: board)
    }

    @Test("A session ended by another process is refused at once by this one's cache; with no board, only after 0.5 s")
    func endedByAnotherProcess() async throws {
        let dir = NSTemporaryDirectory() + "gatehouse-board-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The store stands for the shared file; each cache is one process with its own mapping.
        let store = InMemorySessionStore()
        let clock = ManualClock()
        let a = try Self.cache(over: store, board: SQLiteSessionEndBoard(databasePath: dir + "/g.sqlite"), clock: clock)
        let b = try Self.cache(over: store, board: SQLiteSessionEndBoard(databasePath: dir + "/g.sqlite"), clock: clock)
        let unaware = try Self.cache(over: store, board: nil, clock: clock)

        let one = try store.createSession(.make(sub: "u1", now: now))
        let two = try store.createSession(.make(sub: "u2", now: now))
        for cache in [a, b, unaware] {
            for session in [one, two] { #expect(try await cache.resolve(idHash: session.idHash, now: now) != nil) }
        }
        try await a.endSession(idHash: one.idHash)
        #expect(try await b.resolve(idHash: one.idHash, now: now) == nil, "ended on a: refused by b at once")
        #expect(try await b.resolve(idHash: two.idHash, now: now) != nil, "the other session is untouched")
        #expect(try await unaware.resolve(idHash: one.idHash, now: now) != nil, "the cache's own bound: up to 0.5 s")

        // "My sessions": one ended by its handle.
        let phone = NewSession.make(sub: "u4", now: now)
        let four = try store.createSession(phone)
        #expect(try await b.resolve(idHash: four.idHash, now: now) != nil)
        #expect(try await a.endSession(handle: phone.handle, sub: "u4", provider: four.provider) == four.idHash)
        #expect(try await b.resolve(idHash: four.idHash, now: now) == nil)

        // Several sessions at once (a subject's): b forgets everything it holds.
        #expect(try await a.endSessions(sub: "u2") == 1)
        #expect(try await b.resolve(idHash: two.idHash, now: now) == nil)
    }
}
