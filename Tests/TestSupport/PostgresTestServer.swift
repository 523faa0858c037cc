import Foundation
import Synchronization

/// A throwaway PostgreSQL server for tests (the Swift twin of `e2e/pg_server.py`): `initdb` in a
/// fresh temporary directory, `postgres` on a free loopback port, password authentication over TCP,
/// stopped and deleted by `destroy()` (and at process exit). `initdb` refuses to run as root, so
/// under root the directory is given to the `postgres` user of the Debian package and the binaries
/// run through `runuser -u postgres --`.
///
/// For example:
/// ```swift
/// let server = try PostgresTestServer.start()
/// let uri = try server.createDatabase()   // postgresql://gatehouse:…@127.0.0.1:PORT/t_…
/// defer { server.destroy() }
/// ```
public final class PostgresTestServer: Sendable {
    /// The superuser the tests connect as, and its password (TCP connections need it).
    public static let user = "gatehouse"
    public static let password = "pg-test-S3cret"

    public let port: Int
    /// Where `startPgBouncer()` listens.
    public let bouncerPort: Int
    public let directory: String
    public let binDirectory: String
    private let runAsPostgres: Bool
    /// Both ports stay reserved for the server's whole life (`postgres` and PgBouncer bind beside a
    /// reservation with `SO_REUSEADDR`). A port found free and then released could be handed to a
    /// concurrent test's reservation before `postgres` binds it, and that test's gateway would then
    /// find it taken; a restart after `stopServer()` finds its port still ours.
    private let reservations: [PortReservation]
    private let process = Mutex<SpawnedDaemon?>(nil)
    private let bouncer = Mutex<SpawnedDaemon?>(nil)

    /// Why the server could not be started.
    public struct StartError: Error, Sendable, CustomStringConvertible {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }

    /// One server shared by every test of the process, started on first use (each test takes a
    /// database of its own with `createDatabase()`).
    public static let shared: Result<PostgresTestServer, StartError> = {
        do {
            return .success(try start())
        } catch let error as StartError {
            return .failure(error)
        } catch {
            return .failure(StartError(description: "\(error)"))
        }
    }()

    /// The shared server with PgBouncer started in front of it (once).
    public static let sharedBehindPgBouncer: Result<PostgresTestServer, StartError> = shared.flatMap { server in
        do {
            try server.startPgBouncer()
            return .success(server)
        } catch {
            return .failure(error as? StartError ?? StartError(description: "\(error)"))
        }
    }

    /// The newest `/usr/lib/postgresql/*/bin` holding `initdb` (or `$GATEHOUSE_PG_BIN`).
    public static func findBinaries(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        var candidates = versions.map { "\(root)/\($0)/bin" }
        if let dir = environment["GATEHOUSE_PG_BIN"], !dir.isEmpty { candidates = [dir] }
        for dir in candidates where FileManager.default.isExecutableFile(atPath: dir + "/initdb") {
            return dir
        }
        throw StartError(description: """
            PostgreSQL server binaries not found in \(candidates.first ?? root + "/*/bin") (initdb, postgres): install the Debian \
            package `postgresql` (`bash e2e/setup.sh` does) or set GATEHOUSE_PG_BIN. These tests do not skip.
            """)
    }

    /// Initializes and starts a server; throws with the server's log when it does not come up.
    public static func start() throws -> PostgresTestServer {
        let bin = try findBinaries()
        let root = geteuid() == 0
        let directory = NSTemporaryDirectory() + "gatehouse-pg-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(password.utf8).write(to: URL(fileURLWithPath: directory + "/pwfile"))
        if root {
            try run(["/bin/chown", "-R", "postgres:postgres", directory])
        }
        let prefix = root ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []
        try run(prefix + ["\(bin)/initdb", "-D", directory + "/data", "-U", user, "--pwfile", directory + "/pwfile",
                          "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"])
        let server = PostgresTestServer(serverPort: try PortReservation(), bouncerPort: try PortReservation(),
                                        directory: directory, binDirectory: bin, runAsPostgres: root)
        do {
            try server.startServer()
        } catch {
            server.destroy()
            throw error
        }
        liveServers.withLock { $0.append(server) }
        return server
    }

    private init(serverPort: PortReservation, bouncerPort: PortReservation, directory: String, binDirectory: String,
                 runAsPostgres: Bool) {
        reservations = [serverPort, bouncerPort]
        self.port = serverPort.port
        self.bouncerPort = bouncerPort.port
        self.directory = directory
        self.binDirectory = binDirectory
        self.runAsPostgres = runAsPostgres
    }

    /// A connection URI for `database` with the password in it.
    public func uri(database: String = "postgres") -> String {
        "postgresql://\(Self.user):\(Self.password)@127.0.0.1:\(port)/\(database)"
    }

    /// Creates an empty database with a fresh name and returns its URI (through PgBouncer when asked).
    public func createDatabase(throughPgBouncer: Bool = false) throws -> String {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try psql("CREATE DATABASE \(name)")
        return throughPgBouncer ? bouncerURI(database: name) : uri(database: name)
    }

    /// Runs SQL as the superuser through `psql` on the server's socket.
    public func psql(_ sql: String, database: String = "postgres") throws {
        try Self.run([binDirectory + "/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", directory, "-p", String(port),
                      "-U", Self.user, "-d", database, "-c", sql])
    }

    /// Starts `postgres` (again, after `stopServer()`) on the same port and data, and waits until it
    /// accepts connections.
    public func startServer() throws {
        let process = try launch([binDirectory + "/postgres", "-D", directory + "/data", "-p", String(port),
                                  "-k", directory, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                                  "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                                  "-c", "max_connections=200"], log: "server.log", port: port, what: "PostgreSQL")
        self.process.withLock { $0 = process }
    }

    /// Stops the server (fast shutdown: open connections are closed) and waits for it to exit.
    public func stopServer() {
        stop(process, pidFile: directory + "/data/postmaster.pid", signal: SIGINT)
    }

    // MARK: - PgBouncer

    /// Starts PgBouncer (Debian `pgbouncer`) in transaction mode in front of this server on
    /// `bouncerPort`, with ONE server connection per database, so every client transaction runs on a
    /// connection the previous one used: state a transaction left behind would reach the next.
    public func startPgBouncer() throws {
        let binary = "/usr/sbin/pgbouncer"
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw StartError(description: "\(binary) not found: install the Debian package `pgbouncer` (`bash e2e/setup.sh` does)")
        }
        let dir = directory + "/pgbouncer"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data("\"\(Self.user)\" \"\(Self.password)\"\n".utf8).write(to: URL(fileURLWithPath: dir + "/userlist.txt"))
        try Data("""
            [databases]
            * = host=127.0.0.1 port=\(port)

            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(bouncerPort)
            unix_socket_dir =
            auth_type = scram-sha-256
            auth_file = \(dir)/userlist.txt
            pool_mode = transaction
            default_pool_size = 1
            max_client_conn = 500
            pidfile = \(dir)/pgbouncer.pid

            """.utf8).write(to: URL(fileURLWithPath: dir + "/pgbouncer.ini"))
        if runAsPostgres { try Self.run(["/bin/chown", "-R", "postgres:postgres", dir]) }
        let process = try launch([binary, dir + "/pgbouncer.ini"], log: "pgbouncer.log", port: bouncerPort, what: "PgBouncer")
        bouncer.withLock { $0 = process }
    }

    /// A URI for `database` through PgBouncer (after `startPgBouncer()`).
    public func bouncerURI(database: String) -> String {
        "postgresql://\(Self.user):\(Self.password)@127.0.0.1:\(bouncerPort)/\(database)"
    }

    // MARK: - Processes

    /// Starts a daemon (as `postgres` under root), logging to `log` in the directory, and waits
    /// (bounded: 600 × 100 ms) until `pg_isready` says `port` accepts connections.
    private func launch(_ command: [String], log name: String, port: Int, what: String) throws -> SpawnedDaemon {
        let arguments = (runAsPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + command
        let logPath = directory + "/" + name
        let daemon = try SpawnedDaemon(arguments, logPath: logPath)
        for _ in 0..<600 {
            if !daemon.isRunning { break }
            if (try? Self.run([binDirectory + "/pg_isready", "-q", "-h", "127.0.0.1", "-p", String(port)])) != nil { return daemon }
            usleep(100_000)
        }
        daemon.stop(signal: SIGKILL)
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        throw StartError(description: "\(what) did not start on port \(port):\n\(text.suffix(2_000))")
    }

    /// Stops the daemon held in `slot`: `signal` to the pid in `pidFile` (runuser in between would
    /// not forward it), then waits for it to exit.
    private func stop(_ slot: borrowing Mutex<SpawnedDaemon?>, pidFile: String, signal: Int32) {
        guard let daemon = slot.withLock({ current -> SpawnedDaemon? in
            defer { current = nil }
            return current
        }) else { return }
        let pidText = (try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? ""
        daemon.stop(signal: signal, target: pidText.split(whereSeparator: \.isWhitespace).first.flatMap { pid_t($0) })
    }

    /// Stops the server and deletes its directory.
    public func destroy() {
        stop(bouncer, pidFile: directory + "/pgbouncer/pgbouncer.pid", signal: SIGTERM)
        stopServer()
        try? FileManager.default.removeItem(atPath: directory)
        liveServers.withLock { $0.removeAll { $0 === self } }
    }

    private static func run(_ arguments: [String]) throws {
        // `ChildProcess`, not Foundation's `Process` (see there): its pipe is close-on-exec from the
        // start and the child inherits nothing else.
        let (status, output) = try ChildProcess.run(arguments)
        guard status == 0 else {
            throw StartError(description: "\(arguments.joined(separator: " ")) failed (\(status)): " + output)
        }
    }
}

/// Servers not yet destroyed: stopped and deleted when the test process exits.
private let liveServers: Mutex<[PostgresTestServer]> = {
    atexit {
        let servers = liveServers.withLock { $0 }
        servers.forEach { $0.destroy() }
    }
    return Mutex([])
}()
