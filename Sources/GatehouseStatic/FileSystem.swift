#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a `stat` says about a file, enough to tell whether a cached copy is still current.
///
/// Device and inode are part of it so that a symlink re-pointed at another file of the same size and
/// time is not mistaken for the file that was cached (and checked to lie inside the root).
struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int
    var modificationNanoseconds: Int64
    var isRegularFile: Bool
    var isDirectory: Bool

    var modificationSeconds: Int64 { modificationNanoseconds / 1_000_000_000 }
}

/// Why a file could not be read.
struct FileSystemError: Error, Equatable, Sendable {
    /// The system call that failed and its errno.
    var call: String
    var errno: Int32
}

/// The few POSIX calls the static file server needs, as small synchronous functions.
enum FileSystem {
    /// `stat` (following symlinks); nil when the path does not exist or cannot be reached.
    static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        // `withCString` lends the string's own bytes; passing the String itself made a copy
        // (`utf8CString`) on every static request.
        guard path.withCString({ stat($0, &info) }) == 0 else { return nil }
        return FileIdentity(info)
    }

    /// The canonical absolute path (symlinks, `.` and `..` resolved), or nil.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Reads a whole regular file and returns it with the identity of exactly the bytes read
    /// (`fstat` on the open descriptor, so a rename in between cannot mix two files).
    static func readFile(_ path: String) throws(FileSystemError) -> (FileIdentity, [UInt8]) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileSystemError(call: "open", errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileSystemError(call: "fstat", errno: errno) }
        let identity = FileIdentity(info)
        var bytes = [UInt8](repeating: 0, count: identity.size)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer in
                pread(fd, buffer.baseAddress! + filled, buffer.count - filled, off_t(filled))
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileSystemError(call: "pread", errno: errno)
            }
            if count == 0 { break }  // the file shrank since fstat
            filled += count
        }
        if filled < bytes.count { throw FileSystemError(call: "pread", errno: EIO) }
        return (identity, bytes)
    }
}

extension FileIdentity {
    init(_ info: stat) {
        #if canImport(Darwin)
        let time = info.st_mtimespec
        #else
        let time = info.st_mtim
        #endif
        let mode = info.st_mode & S_IFMT
        self.init(device: UInt64(truncatingIfNeeded: info.st_dev),
                  inode: UInt64(truncatingIfNeeded: info.st_ino),
                  size: Int(truncatingIfNeeded: info.st_size),
                  modificationNanoseconds: Int64(time.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
                      .partialValue &+ Int64(time.tv_nsec),
                  isRegularFile: mode == S_IFREG,
                  isDirectory: mode == S_IFDIR)
    }
}
