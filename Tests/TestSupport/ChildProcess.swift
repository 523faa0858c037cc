#if canImport(Glibc)
import Glibc
#endif

/// A child process for test fixtures (openssl, a Python server, this test binary in a namespace),
/// started with `posix_spawn`.
///
/// Not Foundation's `Process`: on Linux its `run()` lists `/proc/self/fd` to close the parent's
/// descriptors in the child, and crashes (memcpy past its buffer) when other threads open sockets
/// meanwhile, which is the normal state of a parallel test run. Here the child closes every
/// descriptor above stderr itself (`posix_spawn_file_actions_addclosefrom_np`), so no socket of a
/// test leaks into it either.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    /// The read end of the child's stdout (and stderr when `mergeStandardError`).
    private let output: Int32
    private var buffered: [UInt8] = []

    /// - Parameter arguments: the program (looked up in `PATH`) and its arguments.
    public init(_ arguments: [String], environment: [String: String]? = nil,
                mergeStandardError: Bool = true) throws {
        let (readEnd, writeEnd) = try SpawnDescriptors.pipe()
        let fds = [readEnd, writeEnd]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        if mergeStandardError {
            posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        SpawnDescriptors.closeInherited(&actions)
        let environment = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        var spawned: pid_t = 0
        let status = Self.withCStrings(arguments) { argv in
            if let environment {
                return Self.withCStrings(environment) { envp in posix_spawnp(&spawned, arguments[0], &actions, nil, argv, envp) }
            }
            return posix_spawnp(&spawned, arguments[0], &actions, nil, argv, environ)
        }
        close(fds[1])
        guard status == 0 else {
            close(fds[0])
            throw RawClientError(what: "posix_spawnp(\(arguments[0]))", errno: status)
        }
        pid = spawned
        output = fds[0]
    }

    deinit { close(output) }

    /// The next line of output without its newline; nil at the end of the output.
    public func readLine() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            guard let chunk = readChunk() else {
                defer { buffered.removeAll() }
                return buffered.isEmpty ? nil : String(decoding: buffered, as: UTF8.self)
            }
            buffered += chunk
        }
    }

    /// Everything the child writes until it closes its output.
    public func readToEnd() -> [UInt8] {
        var all = buffered
        buffered.removeAll()
        while let chunk = readChunk() { all += chunk }
        return all
    }

    /// Waits for the child to exit; its exit status (128 + signal when killed).
    @discardableResult
    public func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    /// SIGKILL, then reaps it (the child inherits the runner's blocked signal mask, so SIGTERM may
    /// never arrive).
    public func kill() {
        Glibc.kill(pid, SIGKILL)
        wait()
    }

    /// Runs `arguments` to its end; its exit status and output (stdout and stderr).
    public static func run(_ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, output: String) {
        let child = try ChildProcess(arguments, environment: environment)
        let output = child.readToEnd()
        return (child.wait(), String(decoding: output, as: UTF8.self))
    }

    private func readChunk() -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count > 0 { return Array(chunk.prefix(count)) }
            if count < 0 && errno == EINTR { continue }
            return nil
        }
    }

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}
