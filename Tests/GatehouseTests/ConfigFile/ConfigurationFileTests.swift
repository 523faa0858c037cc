#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import GatehouseConfigFile
@testable import GatehouseCore

/// The configuration file read into the variables (SPEC "A configuration file"), without a process.
@Suite("Configuration file")
struct ConfigurationFileTests {
    private func parse(_ text: String, environment: [String: String] = [:],
                       files: [String: String] = [:]) -> Result<ConfigurationFile, ConfigurationErrors> {
        ConfigurationFile.parse(text, environment: environment, readFile: { files[$0] })
    }

    private func variables(_ text: String, environment: [String: String] = [:], files: [String: String] = [:]) throws -> [String: String] {
        try parse(text, environment: environment, files: files).get().variables
    }

    private func issues(_ text: String, environment: [String: String] = [:]) -> [String] {
        guard case .failure(let errors) = parse(text, environment: environment) else { return [] }
        return errors.issues.map(\.description)
    }

    @Test("keys are the variables' names, lower-case, without GATEHOUSE_; lists where the variable is one")
    func keys() throws {
        let read = try variables("""
            public_url: https://bff.example.com
            session_idle: 30m
            scopes: [openid, email]
            trusted_proxies: [10.0.0.0/8, 192.168.0.0/16]
            """)
        #expect(read["GATEHOUSE_PUBLIC_URL"] == "https://bff.example.com")
        #expect(read["GATEHOUSE_SESSION_IDLE"] == "30m")
        #expect(read["GATEHOUSE_SCOPES"] == "openid email")
        #expect(read["GATEHOUSE_TRUSTED_PROXIES"] == "10.0.0.0/8,192.168.0.0/16")
    }

    @Test("providers: a map, in the order written, each provider's keys its own variables")
    func providers() throws {
        let read = try variables("""
            providers:
              google:
                profile: google
                client_id: g-id
              corp-sso:
                issuer: https://sso.example.com
                groups_claim: realm_access.roles
                allowed_email_domains: [example.com, example.org]
            """)
        #expect(read["GATEHOUSE_PROVIDERS"] == "google,corp-sso")
        #expect(read["GATEHOUSE_IDP_GOOGLE_PROFILE"] == "google")
        #expect(read["GATEHOUSE_IDP_GOOGLE_CLIENT_ID"] == "g-id")
        #expect(read["GATEHOUSE_IDP_CORP_SSO_GROUPS_CLAIM"] == "realm_access.roles")
        #expect(read["GATEHOUSE_IDP_CORP_SSO_ALLOWED_EMAIL_DOMAINS"] == "example.com,example.org")
    }

    @Test("routes: prefix, upstream and options; allow as a rule, a map or a list of either")
    func routes() throws {
        let read = try variables("""
            routes:
              - prefix: /api
                upstream: http://api:9000
              - prefix: /admin
                upstream: http://admin:9100
                auth: user
                providers: [corp, google]
                allow:
                  - {groups: [admin, ops], email_domain: example.com}
                  - sub:alice
            """)
        #expect(read["GATEHOUSE_ROUTES"] == "/api=http://api:9000,/admin=http://admin:9100;auth=user;providers=corp|google;"
                + "allow=groups:admin|ops+email_domain:example.com;allow=sub:alice")
        let routes = UpstreamRoute.parseList(read["GATEHOUSE_ROUTES"]!)
        #expect(routes.errors.isEmpty)
        #expect(routes.routes[1].allow?.alternatives.count == 2)
    }

    @Test("${NAME} from the environment, *_file from a file without its last newline")
    func secrets() throws {
        let read = try variables("""
            client_secret_file: /run/secrets/idp
            secret_key: ${GH_KEY}
            database: postgres://gh:${PG_PASSWORD}@db/gh
            """, environment: ["GH_KEY": "a2V5", "PG_PASSWORD": "p@ss"], files: ["/run/secrets/idp": "s3cret\n"])
        #expect(read["GATEHOUSE_CLIENT_SECRET"] == "s3cret")
        #expect(read["GATEHOUSE_SECRET_KEY"] == "a2V5")
        #expect(read["GATEHOUSE_DATABASE"] == "postgres://gh:p@ss@db/gh")
    }

    @Test("every problem names its key and line", arguments: [
        ("public_ur: x", "public_ur (line 1): is not a configuration key (did you mean public_url?)"),
        ("secret_key: ${NOPE}", "secret_key (line 1): needs ${NOPE}, which is not set in the environment"),
        ("client_secret_file: /missing", "client_secret_file (line 1): names \"/missing\", which cannot be read"),
        ("cookie_samesite: [Lax]", "cookie_samesite (line 1): must be a single value, not a list"),
        ("session_idle:", "session_idle (line 1): has no value (leave the key out for its default)"),
        ("routes:\n  - prefix: /api", "routes[0] (line 2): has no upstream (the URL it forwards to)"),
        ("routes:\n  - {prefix: /a, upstream: 'http://a', auht: none}", "routes[0].auht (line 2): is not a route option (did you mean auth?)"),
        ("providers:\n  Bad_Name: {}", "providers.Bad_Name (line 2): is not a provider name (1–32 of a-z, 0-9 and -)"),
        ("a: 1\na: 2", "line 2: a is given twice in the same map"),
        ("x: &a 1\ny: *a", "line 2: an alias (*name) is not supported in the configuration: write the value out"),
        ("- a\n- b", "the file (line 1): must be a map of keys (public_url: …, routes: …)"),
        ("a: [1, 2", "line 2: did not find expected ',' or ']'"),
    ])
    func problems(text: String, message: String) {
        #expect(issues(text).contains(message), "\(issues(text))")
    }

    @Test("the environment wins; the loader's problems point into the file")
    func mergedAndPointed() throws {
        let file = try parse("public_url: https://a.example\nsession_idle: soon\n").get()
        let (merged, overridden) = file.merged(with: ["GATEHOUSE_PUBLIC_URL": "https://b.example", "PATH": "/bin"])
        #expect(merged["GATEHOUSE_PUBLIC_URL"] == "https://b.example" && overridden == ["GATEHOUSE_PUBLIC_URL"])
        let pointed = file.pointing(ConfigurationErrors(issues: [
            ConfigurationIssue(variable: "GATEHOUSE_SESSION_IDLE", message: "is not a duration"),
            ConfigurationIssue(variable: "GATEHOUSE_PUBLIC_URL", message: "bad"),
        ]), overridden: overridden)
        #expect(pointed.issues.map(\.description) == [
            "session_idle (line 2, GATEHOUSE_SESSION_IDLE): is not a duration", "GATEHOUSE_PUBLIC_URL: bad"])
    }

    @Test("an empty file is an empty configuration; one document only")
    func documents() throws {
        #expect(try variables("").isEmpty)
        #expect(try variables("# only a comment\n").isEmpty)
        #expect(issues("a: 1\n---\nb: 2\n").first?.contains("more than one YAML document") == true)
    }

    @Test("a reload keeps what the process was built around, and names each that changed")
    func reloadKeeps() throws {
        let running = try loadMinimalConfiguration(["GATEHOUSE_LISTEN": "127.0.0.1:8080", "GATEHOUSE_MAX_BODY": "1m"]).get()
        let next = try loadMinimalConfiguration(["GATEHOUSE_LISTEN": "127.0.0.1:9090", "GATEHOUSE_MAX_BODY": "1m",
                                                 "GATEHOUSE_ROUTES": "/api=http://api:9000"]).get()
        let (kept, needRestart) = ConfigurationReload.applying(next, over: running)
        #expect(needRestart == ["GATEHOUSE_LISTEN"])
        #expect(kept.listen == running.listen && kept.routes.map(\.prefix) == ["/api"])
    }
}

/// The documents made from the loader's definitions stay equal to them.
@Suite("Configuration documents")
struct ConfigurationDocumentTests {
    private static var repository: String {
        var path = #filePath
        for _ in 0..<4 { path = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]) }
        return path
    }

    private static func read(_ relative: String) -> String? {
        guard let file = fopen(repository + "/" + relative, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("docs/gatehouse.schema.json is what `gatehouse schema` prints (regenerate with it)")
    func schemaFile() {
        #expect(Self.read("docs/gatehouse.schema.json") == ConfigurationSchema.json())
    }

    @Test("every variable, and so every file key, is documented once in docs/configuration.md")
    func everyVariableDocumented() throws {
        let text = try #require(Self.read("docs/configuration.md"))
        for variable in GatehouseConfiguration.variables {
            // A row's first cell names the variables it documents (some rows name a few together).
            let rows = text.split(separator: "\n").filter { line in
                guard line.hasPrefix("| `") else { return false }
                let cell = line.dropFirst(2).prefix { $0 != "|" }
                return cell.contains("`\(variable.name)`")
            }
            #expect(rows.count == 1, "\(variable.name): \(rows.count) rows")
        }
    }
}
