import CLinux
import EventLoops
#if canImport(Glibc)
import Glibc
#endif

/// Tells when the configuration file may have changed: inotify on the file's directory, so that an
/// editor's write in place, its rename over the file, and a Kubernetes ConfigMap's swap of the
/// `..data` symlink beside it are all seen. Events are debounced (an editor's save is several), and
/// the reloader then compares the file's bytes with what it last loaded.
enum ConfigurationWatcher {
    /// Starts a thread that yields `"file change"` to `changes` after each burst of events in the
    /// directory of `path`; false when the directory cannot be watched (SIGHUP still reloads).
    static func start(path: String, debounceMilliseconds: Int32 = 300,
                      changes: AsyncStream<String>.Continuation) -> Bool {
        let directory = Self.directory(of: path)
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0 else { return false }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            close(fd)
            return false
        }
        return DetachedThread.start(name: "gatehouse-config") {
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                // Block for the first event, then drain until the directory is quiet.
                guard drain(fd, &buffer, timeout: -1) else { return }
                while drain(fd, &buffer, timeout: debounceMilliseconds) {}
                changes.yield("file change")
            }
        }
    }

    /// Reads what is pending after waiting up to `timeout` ms (-1: forever); false when nothing came.
    private static func drain(_ fd: Int32, _ buffer: inout [UInt8], timeout: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, timeout)
        guard ready > 0 else { return false }
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return count > 0
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }
}
