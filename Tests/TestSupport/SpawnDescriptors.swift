#if canImport(Glibc)
import Glibc
#endif

/// What a child started by the tests may inherit: nothing but its standard descriptors.
///
/// A parallel test run opens pipes and sockets on many threads while other threads start
/// children. A descriptor a child inherits by accident stays open as long as the child lives: a
/// PgBouncer started for the PostgreSQL suites once kept the write end of another test's `openssl`
/// output pipe, so that test waited for an end of output that never came, and the whole run hung
/// until CI's limit (seen in a CI-like run before 0c38221; the likely cause of an earlier CI hang).
/// So every spawn closes all descriptors above stderr in the child, and pipes are made close-on-exec
/// from the start (`pipe2`), not a moment later.
enum SpawnDescriptors {
    /// Adds "close every descriptor from 3 up" to `actions`; false when the C library cannot.
    @discardableResult
    static func closeInherited(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>) -> Bool {
        guard let closeFrom else { return false }
        return closeFrom(actions, 3) == 0
    }

    /// A pipe whose two ends are close-on-exec from the moment they exist.
    static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        if let pipe2 {
            guard pipe2(&fds, O_CLOEXEC) == 0 else { throw RawClientError(what: "pipe2", errno: errno) }
        } else {
            guard Glibc.pipe(&fds) == 0 else { throw RawClientError(what: "pipe", errno: errno) }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        return (fds[0], fds[1])
    }

    /// glibc ≥ 2.34 has it; Swift's Glibc module does not export it, so it is looked up.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            return nil
        }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Declared only with `_GNU_SOURCE`, which Swift's Glibc module is not built with.
    private static let pipe2: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32).self)
    }()
}
