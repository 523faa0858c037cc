import Foundation
import Synchronization

/// A child process started with `posix_spawn` and a clean signal state. Foundation's `Process`
/// passes on the spawning thread's blocked-signal mask (Dispatch's threads block most signals), and
/// a daemon that does not reset it itself (PgBouncer) would then never see the SIGTERM that stops it.
public final class SpawnedDaemon: Sendable {
    public let pid: pid_t
    private let exited = Mutex(false)

    /// Starts `arguments[0]` with `arguments`, stdin from /dev/null, stdout and stderr appended to `logPath`.
    public init(_ arguments: [String], logPath: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // A daemon outlives the tests that run meanwhile: it must hold none of their pipes or sockets.
        SpawnDescriptors.closeInherited(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard rc == 0 else {
            throw PostgresTestServer.StartError(description: "cannot start \(arguments[0]): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
    }

    /// False once the process exited (reaped).
    public var isRunning: Bool {
        exited.withLock { exited in
            if exited { return false }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { exited = true }
            return !exited
        }
    }

    /// Sends `signal` (to `target`, the daemon's own pid when something like runuser sits in between)
    /// and waits for the spawned process to exit: 30 s at most (300 × 100 ms), then SIGKILL.
    public func stop(signal: Int32, target: pid_t? = nil) {
        guard isRunning else { return }
        kill(target ?? pid, signal)
        for _ in 0..<300 {
            if !isRunning { return }
            usleep(100_000)
        }
        if let target { kill(target, SIGKILL) }
        kill(pid, SIGKILL)
        exited.withLock { exited in
            var status: Int32 = 0
            while !exited {
                let result = waitpid(pid, &status, 0)
                if result == pid || (result < 0 && errno != EINTR) { exited = true }
            }
        }
    }
}
