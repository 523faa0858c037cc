import ArgumentParser
import FoundationEssentials
import GatehouseCore
import GatehouseEncoding
import GatehouseSessions
import GatehouseTime
import Logging

/// The database the admin commands work on. They need no provider or secret key, so they read only
/// GATEHOUSE_DATABASE (a SQLite file — WAL lets them run beside a serving gateway — or a PostgreSQL URI).
func openMaintenance() throws -> any SessionAdministration & SessionDatabaseLifecycle {
    let value = maintenanceDatabase
    if let problem = DatabaseSetting.problem(in: value) {
        report("gatehouse: GATEHOUSE_DATABASE: \(problem)")
        throw Exit.usage
    }
    let target = SessionDatabaseTarget(value)
    let logger = Logger(label: "gatehouse")
    do {
        return try target.openMaintenance(logger: logger)
    } catch {
        // `target` prints a PostgreSQL URI without its password.
        report("gatehouse: cannot open the database \(target): \(error)")
        throw Exit.unavailable
    }
}

/// GATEHOUSE_DATABASE as the admin commands read it.
var maintenanceDatabase: String {
    ProcessInfo.processInfo.environment["GATEHOUSE_DATABASE"].flatMap { $0.isEmpty ? nil : $0 } ?? "gatehouse.sqlite"
}

/// Tells the instances serving the same SQLite file that sessions ended (they forget their cached
/// copies before their next request; PostgreSQL's delete trigger does this there).
func announceEndedSessions() {
    guard case .sqlite(let path) = SessionDatabaseTarget(maintenanceDatabase) else { return }
    SQLiteSessionEndBoard(databasePath: path)?.publish(.unknown)
}

func now() -> Int64 { SystemClock().unixSeconds() }

struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply pending Migrations/*.sql to the database and exit.",
        discussion: environmentHelp(["GATEHOUSE_DATABASE"]))

    func run() throws {
        let db = try openMaintenance()
        defer { try? db.close() }
        do {
            let applied = try db.migrate()
            print(applied.isEmpty ? "database is up to date"
                  : "applied: " + applied.map { "\($0.version) \($0.name)" }.joined(separator: ", "))
        } catch {
            report("gatehouse: migration of \(db.displayTarget) failed: \(error)")
            if case .databaseNewerThanBinary = error { throw Exit.usage }
            throw Exit.unavailable
        }
    }
}

struct SessionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions",
        abstract: "List, revoke and purge stored sessions (tokens are never printed).",
        discussion: environmentHelp(["GATEHOUSE_DATABASE"]),
        subcommands: [List.self, Revoke.self, Purge.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List active sessions.",
                                                        discussion: environmentHelp(["GATEHOUSE_DATABASE"]))
        @Flag(help: "Print JSON (one array) instead of a table.") var json = false

        func run() throws {
            let db = try openMaintenance()
            defer { try? db.close() }
            try migrateQuietly(db)
            let sessions: [SessionSummary]
            do { sessions = try db.listSessions(now: now()) } catch {
                report("gatehouse: \(error)")
                throw Exit.unavailable
            }
            // `sub` is the provider's: escaped so that it cannot drive the terminal (SessionListing).
            print(json ? SessionListing.json(sessions) : SessionListing.table(sessions, time: iso))
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a session by id prefix (from `sessions list`) or every session of a subject.",
            discussion: environmentHelp(["GATEHOUSE_DATABASE"]))
        @Argument(help: "Session id prefix (at least 8 hex characters).") var id: String?
        @Option(help: "Revoke every session of this subject.") var sub: String?
        @Option(help: "With --sub: the provider the subject belongs to (default: default; with GATEHOUSE_PROVIDERS, the one provider the subject has sessions at).")
        var provider: String?

        func validate() throws {
            if (id == nil) == (sub == nil) { throw ValidationError("give either a session ID or --sub SUB") }
            if provider != nil, sub == nil { throw ValidationError("--provider goes with --sub") }
            if let provider, !ProviderSettings.isValidName(provider) {
                throw ValidationError("--provider \(provider) is not a provider name (1 to 32 characters of a-z, 0-9 and -)")
            }
        }

        func run() throws {
            let db = try openMaintenance()
            defer { try? db.close() }
            try migrateQuietly(db)
            do {
                let count = try sub.map { try db.deleteSessions(sub: $0, provider: provider ?? subjectsProvider($0, in: db)) }
                    ?? db.deleteSessions(idPrefix: id ?? "")
                if count > 0 { announceEndedSessions() }
                print("revoked \(count) session\(count == 1 ? "" : "s")")
                if count == 0 { throw Exit.failure }
            } catch let error as SessionStoreError {
                report("gatehouse: \(error)")
                switch error {
                case .invalidIDPrefix, .ambiguousIDPrefix: throw Exit.usage
                default: throw Exit.unavailable
                }
            }
        }

        /// The provider of `sub`'s sessions when `--provider` is not given. A subject is one
        /// provider's ("123" at Google and "123" at Facebook are two people): with
        /// GATEHOUSE_PROVIDERS, a subject with sessions at several providers is a usage error,
        /// naming them, and nothing is revoked.
        private func subjectsProvider(_ sub: String, in db: any SessionAdministration) throws -> String {
            let named = ProcessInfo.processInfo.environment["GATEHOUSE_PROVIDERS"].map { !$0.isEmpty } ?? false
            guard named else { return ProviderSettings.defaultName }
            let holders = Set(try db.listSessions(now: now()).filter { $0.sub == sub }.map(\.provider)).sorted()
            guard holders.count <= 1 else {
                report("gatehouse: this subject has sessions at \(holders.joined(separator: " and ")); "
                       + "add --provider NAME (a subject is one provider's)")
                throw Exit.usage
            }
            return holders.first ?? ProviderSettings.defaultName
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete expired sessions, pending logins and logout-token records.",
                                                        discussion: environmentHelp(["GATEHOUSE_DATABASE"]))
        func run() throws {
            let db = try openMaintenance()
            defer { try? db.close() }
            try migrateQuietly(db)
            do {
                let counts = try db.purgeExpired(now: now())
                print("purged \(counts.sessions) sessions, \(counts.pendingLogins) pending logins, \(counts.logoutJTIs) logout tokens")
            } catch {
                report("gatehouse: \(error)")
                throw Exit.unavailable
            }
        }
    }
}

private func migrateQuietly(_ db: any SessionAdministration & SessionDatabaseLifecycle) throws {
    do { _ = try db.migrate() } catch {
        report("gatehouse: \(db.displayTarget): \(error)")
        throw Exit.unavailable
    }
}

private func iso(_ seconds: Int64) -> String {
    Date(timeIntervalSince1970: TimeInterval(seconds)).ISO8601Format()
}
