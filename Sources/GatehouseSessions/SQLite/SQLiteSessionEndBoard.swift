import CLinux
import Glibc

/// Tells every process on one SQLite database which sessions ended, before the ending is answered:
/// PostgreSQL's `gatehouse_session_ended` announcements (`PostgresSessionEndListener`) for the
/// SQLite file that several instances on one host — or `gatehouse sessions revoke` beside a serving
/// instance — share (SPEC "Sessions the SPA controls": a session ended on one instance is refused by
/// every instance for any request sent after the ending answer arrived).
///
/// A small file beside the database (`<database>-ends`), mapped shared by every process: a counter
/// of endings and a ring of the last `capacity` ones, each an ended session's id hash or "unknown"
/// (several sessions at once: a back-channel logout, a subject's sessions). An ending is written
/// after its delete committed; a reader compares one word per request (`head`) with what it has
/// seen, and only when it moved reads the new entries (`entries(after:)`). A reader that fell more
/// than `capacity` behind is told "unknown" and forgets every cached session.
///
/// Entries are written seqlock-style: the slot's sequence is zeroed, the id hash written, then the
/// sequence set to the entry's number + 1; a reader that sees another sequence afterwards knows the
/// slot was being written or overwritten.
public final class SQLiteSessionEndBoard: @unchecked Sendable {
    /// What one entry says ended.
    public enum Ended: Equatable, Sendable {
        /// The session with this id hash (64 hex characters).
        case session(String)
        /// Sessions this entry cannot name (or entries overwritten before they were read).
        case unknown
    }

    public static let capacity: UInt64 = 256
    public static let hashBytes = 64
    public static let headerBytes = 64
    public static let slotBytes = 8 + hashBytes
    public static let fileBytes = headerBytes + Int(capacity) * slotBytes

    public let path: String
    // Mapped for the life of the board (and of the process, in practice): `@unchecked Sendable`
    // because every access to it goes through the atomics or the seqlock above.
    private let base: UnsafeMutableRawPointer

    /// The board's file for a SQLite database at `databasePath`.
    public static func path(forDatabase databasePath: String) -> String { databasePath + "-ends" }

    /// Opens (creating it, mode 0600) the board of the SQLite database at `databasePath`.
    /// Nil for an in-memory database, or when the file cannot be created or mapped (`errno` says
    /// why): endings elsewhere are then noticed only within the cache's half-second bound.
    public init?(databasePath: String) {
        guard !databasePath.isEmpty, databasePath != ":memory:", !databasePath.hasPrefix("file:") else { return nil }
        path = Self.path(forDatabase: databasePath)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { return nil }
        // Growing with zeros is what every process would do: an empty board (counter 0).
        if Int(status.st_size) < Self.fileBytes, ftruncate(fd, off_t(Self.fileBytes)) != 0 { return nil }
        guard let mapped = mmap(nil, Self.fileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
              mapped != MAP_FAILED else { return nil }
        base = mapped
    }

    deinit { munmap(base, Self.fileBytes) }

    private var counter: UnsafeMutablePointer<UInt64> { base.assumingMemoryBound(to: UInt64.self) }

    private func slot(_ number: UInt64) -> UnsafeMutableRawPointer {
        base + Self.headerBytes + Int(number % Self.capacity) * Self.slotBytes
    }

    /// How many endings were ever written: one atomic load, what a request pays.
    @inline(__always)
    public var head: UInt64 { gatehouse_shared_load(counter) }

    /// Writes an ending and returns its number. Call it after the delete committed, before the
    /// ending is answered.
    @discardableResult
    public func publish(_ ended: Ended) -> UInt64 {
        let number = gatehouse_shared_fetch_add(counter, 1)
        let slot = slot(number)
        let sequence = slot.assumingMemoryBound(to: UInt64.self)
        gatehouse_shared_store(sequence, 0)
        gatehouse_shared_fence()
        let hash = (slot + 8).assumingMemoryBound(to: UInt8.self)
        hash.initialize(repeating: 0, count: Self.hashBytes)
        if case .session(let idHash) = ended {
            let bytes = Array(idHash.utf8.prefix(Self.hashBytes))
            if bytes.count == Self.hashBytes { hash.update(from: bytes, count: bytes.count) }
        }
        gatehouse_shared_store(sequence, number &+ 1)
        return number
    }

    /// The endings numbered `seen ..< upTo`, and where the next read starts: at the first entry
    /// still being written (its writer has not answered yet; the entries after it are read now and
    /// again next time, which forgets nothing twice that matters), else at `upTo`.
    public func entries(after seen: UInt64, upTo: UInt64) -> (ended: [(number: UInt64, ended: Ended)], next: UInt64) {
        guard upTo > seen else { return ([], upTo) }
        if upTo - seen > Self.capacity { return ([(upTo - 1, .unknown)], upTo) }
        var ended: [(number: UInt64, ended: Ended)] = []
        var next = upTo
        for number in seen..<upTo {
            let slot = slot(number)
            let sequence = slot.assumingMemoryBound(to: UInt64.self)
            let before = gatehouse_shared_load(sequence)
            if before != number &+ 1 {
                // Being written (0, or the number of an entry `capacity` earlier), or overwritten
                // by a later one: the former is read again next time, the latter is lost.
                if before > number &+ 1 { ended.append((number, .unknown)) } else { next = min(next, number) }
                continue
            }
            let bytes = Array(UnsafeBufferPointer(start: (slot + 8).assumingMemoryBound(to: UInt8.self), count: Self.hashBytes))
            gatehouse_shared_fence()
            guard gatehouse_shared_load(sequence) == number &+ 1 else {
                ended.append((number, .unknown))
                continue
            }
            if !bytes.allSatisfy({ $0 == 0 }), let text = String(validating: bytes, as: UTF8.self) {
                ended.append((number, .session(text)))
            } else {
                ended.append((number, .unknown))
            }
        }
        return (ended, next)
    }
}
