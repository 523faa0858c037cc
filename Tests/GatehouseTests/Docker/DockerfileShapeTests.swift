import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Docker cannot run on the build machine, so these tests read the repository's `Dockerfile` and
/// check what an operator relies on: a separate build stage, a non-root user, the `/data` volume,
/// port 8080, a health check on `/healthz`, a graceful stop signal, and an entrypoint that runs
/// the `gatehouse` binary. They also catch a `COPY` of a path that does not exist (or that
/// `.dockerignore` leaves out), which would only fail at `docker build` time.
@Suite("Dockerfile shape")
struct DockerfileShapeTests {
    let repository: URL
    let stages: [DockerStage]

    init() throws {
        let root = Self.repositoryRoot()
        let text = try String(contentsOf: root.appendingPathComponent("Dockerfile"), encoding: .utf8)
        repository = root
        stages = DockerStage.split(DockerInstruction.parse(text))
    }

    /// `Tests/GatehouseTests/Docker/<this file>` → the repository root.
    static func repositoryRoot(file: String = #filePath) -> URL {
        URL(fileURLWithPath: file)
            .deletingLastPathComponent() // Docker
            .deletingLastPathComponent() // GatehouseTests
            .deletingLastPathComponent() // Tests
            .deletingLastPathComponent()
    }

    var finalStage: DockerStage? { stages.last }

    @Test("The image is built in one stage and runs from another")
    func multiStage() throws {
        #expect(stages.count >= 2)
        let build = try #require(stages.first)
        let swiftBuild = build.instructions.first {
            $0.keyword == "RUN" && $0.arguments.contains("swift build")
        }
        let run = try #require(swiftBuild, "the first stage never runs `swift build`")
        #expect(run.arguments.contains("-c release"))
        #expect(run.arguments.contains("--static-swift-stdlib"))
        #expect(run.arguments.contains("--product gatehouse"))
        #expect(finalStage?.baseImage != build.baseImage, "the runtime stage must not carry the toolchain")
    }

    @Test("The final stage runs as a user other than root")
    func nonRootUser() throws {
        let stage = try #require(finalStage)
        let user = try #require(stage.last("USER"), "the final stage has no USER")
        let name = user.arguments.split(separator: ":").first.map(String.init) ?? ""
        #expect(!name.isEmpty)
        #expect(name != "root" && name != "0")
        // ENTRYPOINT and CMD must run after the switch, not before it.
        let userIndex = try #require(stage.instructions.lastIndex { $0.keyword == "USER" })
        let entrypointIndex = try #require(stage.instructions.lastIndex { $0.keyword == "ENTRYPOINT" })
        #expect(userIndex < entrypointIndex)
    }

    @Test("The database lives on the /data volume")
    func dataVolume() throws {
        let stage = try #require(finalStage)
        let volumes = stage.all("VOLUME").flatMap(\.listArguments)
        #expect(volumes.contains("/data"))
        let database = try #require(stage.environment["GATEHOUSE_DATABASE"])
        #expect(database.hasPrefix("/data/"))
    }

    @Test("Ports 8080 and 8443 are exposed: Gatehouse's defaults for plain HTTP, and for HTTPS beside its redirect listener")
    func exposesListenPort() throws {
        let stage = try #require(finalStage)
        let ports = stage.all("EXPOSE").flatMap(\.listArguments)
        #expect(ports.contains("8080") || ports.contains("8080/tcp"))
        #expect(ports.contains("8443") || ports.contains("8443/tcp"))
        // Left to the binary's default, which depends on whether HTTPS is configured.
        #expect(stage.environment["GATEHOUSE_LISTEN"] == nil)
        #expect(stage.environment["GATEHOUSE_PUBLIC_DIR"] == "/app/Public")
    }

    @Test("The health check asks /healthz with a tool the image installs")
    func healthCheck() throws {
        let stage = try #require(finalStage)
        let check = try #require(stage.last("HEALTHCHECK"), "the final stage has no HEALTHCHECK")
        #expect(!check.arguments.uppercased().hasPrefix("NONE"))
        #expect(check.arguments.contains("CMD"))
        #expect(check.arguments.contains("http://127.0.0.1:8080/healthz"))
        if check.arguments.contains("\"curl\"") || check.arguments.contains("CMD curl") {
            let installs = stage.all("RUN").contains {
                $0.arguments.contains("apt-get install") && $0.words.contains("curl")
            }
            #expect(installs, "HEALTHCHECK uses curl but the final stage does not install it")
        }
    }

    @Test("docker stop sends SIGTERM, which Gatehouse drains on")
    func stopSignal() throws {
        let stage = try #require(finalStage)
        #expect(stage.last("STOPSIGNAL")?.arguments == "SIGTERM")
    }

    @Test("Every COPY from the build context names a path that exists and is not ignored")
    func copySourcesExist() throws {
        let ignored = try DockerIgnore(repository: repository)
        let copies = stages.flatMap { $0.all("COPY") + $0.all("ADD") }.filter { $0.flag("from") == nil }
        #expect(!copies.isEmpty)
        for copy in copies {
            let sources = copy.copySources
            #expect(!sources.isEmpty, "\(copy.keyword) \(copy.arguments) copies nothing")
            for source in sources {
                let relative = source.hasPrefix("./") ? String(source.dropFirst(2)) : source
                #expect(FileManager.default.fileExists(atPath: repository.appendingPathComponent(relative).path),
                        "\(copy.keyword) source '\(source)' does not exist in the repository")
                #expect(!ignored.excludes(relative), "COPY source '\(source)' is excluded by .dockerignore")
            }
        }
    }

    @Test("The entrypoint is the gatehouse binary, serving by default")
    func entrypointRunsGatehouse() throws {
        let stage = try #require(finalStage)
        let entrypoint = try #require(stage.last("ENTRYPOINT"), "the final stage has no ENTRYPOINT")
        let executable = try #require(entrypoint.listArguments.first)
        #expect(executable.hasSuffix("/gatehouse"))
        #expect(entrypoint.arguments.hasPrefix("["), "exec form, so the binary is PID 1 and gets SIGTERM")
        // The entrypoint path must be put there by a COPY from the build stage.
        let copied = stage.all("COPY").filter { $0.flag("from") != nil }.compactMap(\.listArguments.last)
        #expect(copied.contains(executable))
        #expect(stage.last("CMD")?.listArguments == ["serve"])
    }

    @Test("The GitHub mirror argument is empty by default, so a plain docker build fetches from GitHub")
    func githubMirrorIsOptional() throws {
        let build = try #require(stages.first)
        let argIndex = try #require(build.instructions.firstIndex {
            $0.keyword == "ARG" && $0.arguments.hasPrefix("GITHUB_MIRROR")
        }, "the build stage declares no GITHUB_MIRROR argument (scripts/container-test passes it)")
        #expect(build.instructions[argIndex].arguments == "GITHUB_MIRROR=\"\"")
        let resolveIndex = try #require(build.instructions.firstIndex {
            $0.keyword == "RUN" && $0.arguments.contains("swift package resolve")
        }, "the build stage never runs `swift package resolve`")
        #expect(argIndex < resolveIndex, "the argument must be declared before the RUN that reads it")
        // An empty mirror must leave git's configuration alone.
        #expect(build.instructions[resolveIndex].arguments.contains("if [ -n \"$GITHUB_MIRROR\" ]"))
    }

    @Test("The parser joins continued lines, skips comments and reads flags")
    func parserReadsDockerfileSyntax() {
        let text = """
        # comment
        FROM swift:6.3 AS build
        RUN apt-get update \\
            # a comment inside a continuation
            && apt-get install -y curl
        COPY --chown=1:1 --from=build /out/a /app/a
        from debian:bookworm-slim
        ENV A=1 B="two words"
        CMD ["serve"]
        """
        let stages = DockerStage.split(DockerInstruction.parse(text))
        #expect(stages.count == 2)
        #expect(stages.first?.baseImage == "swift:6.3")
        #expect(stages.first?.instructions.first { $0.keyword == "RUN" }?.arguments
            == "apt-get update && apt-get install -y curl")
        let copy = stages.first?.last("COPY")
        #expect(copy?.flag("from") == "build")
        #expect(copy?.copySources == ["/out/a"])
        #expect(stages.last?.environment == ["A": "1", "B": "two words"])
        #expect(stages.last?.last("CMD")?.listArguments == ["serve"])
    }
}

// MARK: - A small Dockerfile reader (enough for the checks above, not a full implementation)

struct DockerInstruction: Equatable {
    var keyword: String
    var arguments: String

    /// Joins `\`-continued lines; drops comment and blank lines, also inside continuations (as
    /// BuildKit does).
    static func parse(_ text: String) -> [DockerInstruction] {
        var instructions: [DockerInstruction] = []
        var pending = ""
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasSuffix("\\") {
                pending += line.dropLast().trimmingCharacters(in: .whitespaces) + " "
                continue
            }
            let logical = (pending + line).trimmingCharacters(in: .whitespaces)
            pending = ""
            if let instruction = DockerInstruction(line: logical) { instructions.append(instruction) }
        }
        if let instruction = DockerInstruction(line: pending.trimmingCharacters(in: .whitespaces)) {
            instructions.append(instruction)
        }
        return instructions
    }

    init(keyword: String, arguments: String) {
        self.keyword = keyword
        self.arguments = arguments
    }

    init?(line: String) {
        guard !line.isEmpty else { return nil }
        let parts = line.split(separator: " ", maxSplits: 1)
        keyword = parts[0].uppercased()
        arguments = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
    }

    /// Whitespace-separated words, flags included.
    var words: [String] { arguments.split(whereSeparator: \.isWhitespace).map(String.init) }

    /// `--name=value` flags at the start of the arguments.
    func flag(_ name: String) -> String? {
        for word in words {
            guard word.hasPrefix("--") else { break }
            let pair = word.dropFirst(2).split(separator: "=", maxSplits: 1)
            if pair.first.map(String.init) == name { return pair.count > 1 ? String(pair[1]) : "" }
        }
        return nil
    }

    /// The arguments after the flags: the JSON array form, or whitespace-separated words.
    var listArguments: [String] {
        let rest = words.drop { $0.hasPrefix("--") }.joined(separator: " ")
        if rest.hasPrefix("["), let data = rest.data(using: .utf8),
           let array = try? JSONDecoder().decode([String].self, from: data) {
            return array
        }
        return rest.split(whereSeparator: \.isWhitespace).map(String.init)
    }

    /// For COPY/ADD: every path but the last (the destination).
    var copySources: [String] { Array(listArguments.dropLast()) }
}

struct DockerStage {
    var baseImage: String
    var instructions: [DockerInstruction]

    /// One stage per FROM; instructions before the first FROM (ARG) are dropped.
    static func split(_ instructions: [DockerInstruction]) -> [DockerStage] {
        var stages: [DockerStage] = []
        for instruction in instructions {
            if instruction.keyword == "FROM" {
                let image = instruction.words.first { !$0.hasPrefix("--") } ?? ""
                stages.append(DockerStage(baseImage: image, instructions: []))
            } else if !stages.isEmpty {
                stages[stages.count - 1].instructions.append(instruction)
            }
        }
        return stages
    }

    func all(_ keyword: String) -> [DockerInstruction] { instructions.filter { $0.keyword == keyword } }
    func last(_ keyword: String) -> DockerInstruction? { instructions.last { $0.keyword == keyword } }

    /// `ENV KEY=value KEY2="quoted value"` pairs of the stage (the legacy `ENV KEY value` form too).
    var environment: [String: String] {
        var result: [String: String] = [:]
        for env in all("ENV") {
            let tokens = Self.shellWords(env.arguments)
            if tokens.count == 2, !tokens[0].contains("=") {
                result[tokens[0]] = tokens[1]
                continue
            }
            for token in tokens {
                let pair = token.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { result[String(pair[0])] = String(pair[1]) }
            }
        }
        return result
    }

    /// Splits on whitespace outside double quotes and removes the quotes.
    static func shellWords(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quoted = false
        for character in text {
            if character == "\"" {
                quoted.toggle()
            } else if character.isWhitespace && !quoted {
                if !current.isEmpty { words.append(current); current = "" }
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }
}

/// The `.dockerignore` patterns, matched like Docker does for plain and `**/` patterns.
struct DockerIgnore {
    var patterns: [String]

    init(repository: URL) throws {
        let url = repository.appendingPathComponent(".dockerignore")
        let text = FileManager.default.fileExists(atPath: url.path)
            ? try String(contentsOf: url, encoding: .utf8) : ""
        patterns = text.split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") && !$0.hasPrefix("!") }
    }

    /// True when `path` (relative to the context) or one of its parent folders matches a pattern.
    func excludes(_ path: String) -> Bool {
        let components = path.split(separator: "/").map(String.init)
        guard !components.isEmpty else { return false }
        for length in 1...components.count {
            let prefix = components[0..<length].joined(separator: "/")
            for pattern in patterns {
                let trimmed = pattern.hasPrefix("**/") ? String(pattern.dropFirst(3)) : pattern
                if fnmatch(pattern, prefix, 0) == 0 { return true }
                // `**/x` also matches `x` at any depth, including the top.
                if pattern.hasPrefix("**/"),
                   fnmatch(trimmed, components[length - 1], 0) == 0 { return true }
            }
        }
        return false
    }
}
