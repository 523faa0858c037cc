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
}
