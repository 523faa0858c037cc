import GatehouseCore
import GatehouseEncoding
import GatehouseSessions
import Testing

/// Issue 12: the PostgreSQL password never reaches a log line, an error, `gatehouse check` or
/// `/metrics`; everything that shows `GATEHOUSE_DATABASE` shows `URIPassword.redacting` of it.
@Suite("Database URI password redaction")
struct URIPasswordTests {
    @Test("The userinfo password becomes ***; user, host, port, database and options stay", arguments: [
        ("postgres://app:s3cret@db.internal:5432/gatehouse?sslmode=require",
         "postgres://app:***@db.internal:5432/gatehouse?sslmode=require"),
        ("postgresql://app:p%40ss%2Fw0rd@db/gh", "postgresql://app:***@db/gh"),
        ("postgresql://app@db/gh", "postgresql://app@db/gh"),
        ("postgresql://db/gh", "postgresql://db/gh"),
        ("postgresql://", "postgresql://"),
        ("postgresql://app:@db/gh", "postgresql://app:***@db/gh"),
        ("postgresql://app:a:b@c@db/gh", "postgresql://app:***@db/gh"),
        ("postgres://db/gh?password=s3cret&sslmode=verify-full", "postgres://db/gh?password=***&sslmode=verify-full"),
        ("postgres://db/gh?PassWord=s3cret", "postgres://db/gh?PassWord=***"),
        ("postgres://db/gh?pass%77ord=s3cret", "postgres://db/gh?pass%77ord=***"),
        ("postgres://db/gh?sslpassword=keypass", "postgres://db/gh?sslpassword=***"),
        // An unescaped `/` in the password: libpq's reading is unclear, so everything before the `@` goes.
        ("postgres://app:se/cret@db/gh", "postgres://***@db/gh"),
    ])
    func redacts(uri: String, shown: String) {
        #expect(URIPassword.redacting(uri) == shown)
        #expect(!URIPassword.redacting(uri).contains("s3cret"))
    }

    @Test("A SQLite path is shown as it is")
    func pathsUnchanged() {
        #expect(URIPassword.redacting("/var/lib/gatehouse/gatehouse.sqlite") == "/var/lib/gatehouse/gatehouse.sqlite")
        #expect(URIPassword.redacting("gatehouse:with@odd.sqlite") == "gatehouse:with@odd.sqlite")
    }

    @Test("Scrubbing removes the password as written and percent-decoded from a message")
    func scrubsMessages() {
        let uri = "postgres://app:p%40ss@db/gh?password=other"
        let message = #"invalid percent-encoded token: "p%40ss"; auth failed for p@ss and other"#
        let scrubbed = URIPassword.scrubbing(message, of: uri)
        #expect(!scrubbed.contains("p%40ss") && !scrubbed.contains("p@ss") && !scrubbed.contains("other"))
        #expect(scrubbed.contains("***"))
    }

    @Test("GATEHOUSE_DATABASE selects the engine by scheme; the target prints without the password")
    func targets() {
        #expect(SessionDatabaseTarget("gatehouse.sqlite") == .sqlite(path: "gatehouse.sqlite"))
        #expect(SessionDatabaseTarget("postgres://a:b@h/d").engine == .postgres)
        #expect(SessionDatabaseTarget("PostgreSQL://a:b@h/d").engine == .postgres)
        #expect(SessionDatabaseTarget("postgresx://h/d").engine == .sqlite)
        #expect("\(SessionDatabaseTarget("postgresql://app:hunter2@h/d"))" == "postgresql://app:***@h/d")
    }

    @Test("The configuration's description (logged at startup) does not contain the password")
    func configurationDescription() throws {
        let config = try GatehouseConfiguration.load(environment: [
            "GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa",
            "GATEHOUSE_DATABASE": "postgres://app:hunter2@db:5432/gatehouse",
        ], requireSecretKey: false).get()
        #expect(config.databasePath == "postgres://app:hunter2@db:5432/gatehouse")
        #expect(!config.description.contains("hunter2"))
        #expect(config.description.contains("database=postgres://app:***@db:5432/gatehouse"))
    }

    @Test("libpq's option errors lose their quoted value (it may be part of a password)")
    func optionErrorsMasked() {
        let uri = "postgres://u:pa/ss@h/db"
        let scrubbed = URIPassword.scrubbing(#"invalid port number: "pa""#, of: uri)
        #expect(scrubbed == #"invalid port number: "***""#)
        #expect(URIPassword.scrubbing(#"invalid integer value "pa" for connection option "port""#, of: uri)
                == #"invalid integer value "***" for connection option "port""#)
        #expect(URIPassword.scrubbing(#"could not translate host name "db" to address"#, of: uri)
                == #"could not translate host name "db" to address"#)
    }

    // Found by an outside review (issue #38): both spellings went wrong silently.
    @Test("GATEHOUSE_DATABASE: a raw '/', '?' or '#' in the userinfo, a libpq key=value string, another scheme are refused",
          arguments: ["postgres://u:pa/ss@h/db", "postgresql://app:a?b@db:5432/g", "postgres://u:x#y@h/db",
                      "host=db user=app password=hunter2 dbname=g", "dbname = g", "mysql://u:p@h/db"])
    func refusedDatabaseValues(value: String) throws {
        let problem = try #require(DatabaseSetting.problem(in: value))
        #expect(!problem.contains("hunter2") && !problem.contains("pa/ss") && !problem.contains(value))
        guard case .failure(let errors) = GatehouseConfiguration.load(environment: [
            "GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa", "GATEHOUSE_DATABASE": value,
        ], requireSecretKey: false) else {
            Issue.record("\(value) was accepted")
            return
        }
        #expect(errors.issues.contains { $0.variable == "GATEHOUSE_DATABASE" })
        #expect(!errors.description.contains(value))
    }

    @Test("GATEHOUSE_DATABASE: usual URIs and paths pass",
          arguments: ["gatehouse.sqlite", "/var/lib/gatehouse/sessions.sqlite", "./a=b.sqlite",
                      "postgres://app:p%2Fss@db:5432/g?sslmode=require", "postgresql://db/g",
                      "postgres://u:p@h/db?options=-c%20search_path%3Dx@y", "postgres://u@[::1]:5432/g"])
    func acceptedDatabaseValues(value: String) {
        #expect(DatabaseSetting.problem(in: value) == nil)
    }
}
