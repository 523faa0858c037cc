import Foundation
import Testing

/// Docker cannot run on the build machine, so these tests read `compose.yaml` and `compose.nginx.conf`
/// and check what running several instances relies on (issue 12, docs/operations.md "Running several instances"):
/// PostgreSQL with a volume and a health check, two gateways that share database, secret key and
/// public URL and are reachable only through the balancer, and a balancer that spreads requests
/// round-robin over both, without sticky sessions.
@Suite("compose.yaml shape (several instances)")
struct ComposeShapeTests {
    let compose: ComposeNode
    let nginx: String

    init() throws {
        let root = DockerfileShapeTests.repositoryRoot()
        compose = ComposeNode.parse(try String(contentsOf: root.appendingPathComponent("compose.yaml"), encoding: .utf8))
        nginx = try String(contentsOf: root.appendingPathComponent("compose.nginx.conf"), encoding: .utf8)
    }

    var services: ComposeNode { compose["services"] ?? .map([]) }

    /// The services that run `gatehouse` (built from the repository's Dockerfile).
    var gateways: [(name: String, node: ComposeNode)] {
        services.entries.filter { $0.node["image"]?.scalar == "gatehouse" }
    }

    @Test("PostgreSQL, two gateways and a balancer")
    func composition() throws {
        #expect(gateways.count == 2)
        let postgres = try #require(services["postgres"])
        // `${POSTGRES_IMAGE:-postgres:…}`: the official image unless the environment names another
        // (scripts/container-test substitutes a locally made one; no registry there).
        let postgresImage = postgres["image"]?.scalar ?? ""
        let defaultImage = postgresImage.hasPrefix("${POSTGRES_IMAGE:-") && postgresImage.hasSuffix("}")
            ? String(postgresImage.dropFirst("${POSTGRES_IMAGE:-".count).dropLast()) : postgresImage
        #expect(defaultImage.hasPrefix("postgres:"))
        #expect(postgres["healthcheck"]?["test"]?.scalar?.contains("pg_isready") == true)
        // Its data survives `docker compose down` (a named volume declared at the top level).
        let volume = try #require(postgres["volumes"]?.list.first?.scalar)
        let name = String(volume.prefix { $0 != ":" })
        #expect(volume.hasSuffix(":/var/lib/postgresql/data"))
        #expect(compose["volumes"]?[name] != nil)
        #expect(services["balancer"]?["image"]?.scalar?.hasPrefix("nginx:") == true)
    }

    @Test("The gateways share the database, the secret key and the public URL; they differ in nothing else")
    func gatewaysShareEverything() throws {
        let environments = gateways.map { $0.node["environment"] ?? .map([]) }
        let first = try #require(environments.first)
        for environment in environments.dropFirst() {
            #expect(environment == first)
        }
        let database = try #require(first["GATEHOUSE_DATABASE"]?.scalar)
        let uri = try #require(URLComponents(string: database))
        #expect(uri.scheme == "postgres" || uri.scheme == "postgresql")
        #expect(uri.host == "postgres")
        #expect(uri.password == nil, "the password comes from PGPASSWORD, never inside the URI")
        #expect(first["PGPASSWORD"]?.scalar?.hasPrefix("${POSTGRES_PASSWORD") == true)
        #expect(first["GATEHOUSE_SECRET_KEY"]?.scalar?.hasPrefix("${GATEHOUSE_SECRET_KEY") == true)
        #expect(first["GATEHOUSE_PUBLIC_URL"]?.scalar?.contains("localhost:8080") == true)
        for gateway in gateways {
            #expect(gateway.node["depends_on"]?["postgres"]?["condition"]?.scalar == "service_healthy",
                    "\(gateway.name) must wait for PostgreSQL to be ready")
        }
    }

    @Test("Every variable given to a gateway is one docs/configuration.md documents (or libpq's PG*)")
    func variablesAreKnown() throws {
        let readme = try String(contentsOf: DockerfileShapeTests.repositoryRoot().appendingPathComponent("docs/configuration.md"),
                                encoding: .utf8)
        for gateway in gateways {
            for (name, _) in gateway.node["environment"]?.entries ?? [] {
                #expect(name.hasPrefix("PG") || readme.contains("`\(name)`"), "\(name) is not documented")
            }
        }
    }

    @Test("Only the balancer publishes a port")
    func onlyTheBalancerIsPublished() throws {
        for (name, service) in services.entries {
            #expect((service["ports"] != nil) == (name == "balancer"), "\(name)")
        }
        #expect(services["balancer"]?["ports"]?.list.first?.scalar == "8080:8080")
    }

    @Test("The balancer mounts compose.nginx.conf: round-robin over both gateways, no sticky sessions")
    func balancerIsRoundRobin() throws {
        let mounts = services["balancer"]?["volumes"]?.list.compactMap(\.scalar) ?? []
        #expect(mounts.contains("./compose.nginx.conf:/etc/nginx/nginx.conf:ro"))
        let directives = nginx.split(separator: "\n").map { line in
            String(line.prefix { $0 != "#" }).trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
        let servers = directives.filter { $0.hasPrefix("server ") && $0.hasSuffix(";") }
            .map { $0.split(separator: " ")[1].trimmingCharacters(in: CharacterSet(charactersIn: ";")) }
        #expect(Set(servers) == Set(gateways.map { "\($0.name):8080" }))
        for sticky in ["ip_hash", "hash ", "sticky", "least_conn", "random"] {
            #expect(!directives.contains { $0.hasPrefix(sticky) }, "\(sticky) in compose.nginx.conf")
        }
        #expect(directives.contains("proxy_pass http://gatehouse;"))
        #expect(directives.contains("proxy_set_header Host $http_host;"))
        #expect(directives.contains("proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;"))
        #expect(directives.contains("listen 8080;"))
    }

    @Test("The YAML reader reads maps, lists, quotes and comments")
    func readerReadsTheSubset() {
        let node = ComposeNode.parse("""
        # comment
        a:
          b: "x # not a comment"   # a comment
          c:
            - one
            - 'two'
        d: plain
        """)
        #expect(node["a"]?["b"]?.scalar == "x # not a comment")
        #expect(node["a"]?["c"]?.list.compactMap(\.scalar) == ["one", "two"])
        #expect(node["d"]?.scalar == "plain")
    }
}

/// The subset of YAML that compose.yaml uses: block maps, block lists of scalars, plain or quoted
/// scalars (a flow list such as `["CMD", "x"]` is kept as one scalar), comments.
indirect enum ComposeNode: Equatable {
    case scalar(String)
    case list([ComposeNode])
    case map([Entry])

    struct Entry: Equatable {
        var name: String
        var node: ComposeNode
    }

    var scalar: String? { if case .scalar(let value) = self { return value } else { return nil } }
    var list: [ComposeNode] { if case .list(let items) = self { return items } else { return [] } }
    var entries: [(name: String, node: ComposeNode)] {
        if case .map(let entries) = self { return entries.map { ($0.name, $0.node) } } else { return [] }
    }

    subscript(key: String) -> ComposeNode? { entries.first { $0.name == key }?.node }

    static func parse(_ text: String) -> ComposeNode {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).compactMap { raw -> (Int, String)? in
            let line = stripComment(String(raw))
            let content = line.trimmingCharacters(in: .whitespaces)
            guard !content.isEmpty else { return nil }
            return (line.prefix { $0 == " " }.count, content)
        }
        var index = 0
        return block(lines, &index, indent: 0)
    }

    private static func block(_ lines: [(Int, String)], _ index: inout Int, indent: Int) -> ComposeNode {
        guard index < lines.count else { return .map([]) }
        if lines[index].1.hasPrefix("- ") {
            var items: [ComposeNode] = []
            while index < lines.count, lines[index].0 == indent, lines[index].1.hasPrefix("- ") {
                items.append(.scalar(unquoted(String(lines[index].1.dropFirst(2)))))
                index += 1
            }
            return .list(items)
        }
        var entries: [Entry] = []
        while index < lines.count, lines[index].0 == indent {
            let content = lines[index].1
            guard let colon = content.firstIndex(of: ":") else { index += 1; continue }
            let name = unquoted(String(content[..<colon]))
            let rest = content[content.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            index += 1
            if rest.isEmpty {
                let childIndent = index < lines.count ? lines[index].0 : indent
                entries.append(Entry(name: name, node: childIndent > indent ? block(lines, &index, indent: childIndent) : .map([])))
            } else {
                entries.append(Entry(name: name, node: .scalar(unquoted(rest))))
            }
        }
        return .map(entries)
    }

    /// Drops a `#` comment that starts a line or follows a space outside quotes.
    private static func stripComment(_ line: String) -> String {
        var quote: Character? = nil
        var previous: Character = " "
        for (offset, character) in line.enumerated() {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == "#" && previous == " " {
                return String(line.prefix(offset))
            }
            previous = character
        }
        return line
    }

    private static func unquoted(_ value: String) -> String {
        guard value.count >= 2, let first = value.first, first == value.last, first == "\"" || first == "'" else {
            return value
        }
        return String(value.dropFirst().dropLast())
    }
}
