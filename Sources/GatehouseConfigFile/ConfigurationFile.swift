import GatehouseCore

/// The configuration file (`GATEHOUSE_CONFIG`, SPEC "A configuration file"): YAML whose keys are
/// the environment variables' names without `GATEHOUSE_`, lower-case; `providers:` a map of provider
/// name to that provider's keys; `routes:` a list of maps (`prefix`, `upstream`, the route
/// options). It is read into the variables the loader already knows, each remembered with its key
/// and line, so that one loader validates both and every message can point into the file.
///
/// Secrets stay out of the file: any value may hold `${NAME}` (from the environment; unset is an
/// error), and a key ending in `_file` reads its value from that file (Docker and Kubernetes
/// secrets). A variable set in the environment wins over the file's key.
public struct ConfigurationFile: Sendable {
    /// Where a variable's value was written: the key's path in the file and its line.
    public struct Origin: Sendable, Equatable {
        public let key: String
        public let line: Int
    }

    /// The variables the file sets.
    public private(set) var variables: [String: String] = [:]
    /// Where each was written.
    public private(set) var origins: [String: Origin] = [:]
    /// Where each route was written, by its prefix as written (a route's problem names its prefix).
    public private(set) var routeOrigins: [(prefix: String, origin: Origin)] = []

    /// Reads `text` (the file's contents). `environment` answers `${NAME}`; `readFile` the `*_file` keys.
    public static func parse(_ text: String, environment: [String: String],
                             readFile: @escaping (String) -> String?) -> Result<ConfigurationFile, ConfigurationErrors> {
        let root: YAMLNode
        do { root = try YAMLNode.parse(text) } catch {
            return .failure(ConfigurationErrors(issues: [ConfigurationIssue(variable: "line \(error.line)", message: error.message)]))
        }
        var reader = FileReader(environment: environment, readFile: readFile)
        reader.read(root)
        guard reader.issues.isEmpty else { return .failure(ConfigurationErrors(issues: reader.issues)) }
        return .success(reader.file)
    }

    /// The environment the loader reads: the file's variables, then the process's own over them
    /// (an operator's override at `docker run -e` wins). `overridden`: the file's variables the
    /// environment replaced.
    public func merged(with environment: [String: String]) -> (environment: [String: String], overridden: [String]) {
        var merged = variables
        var overridden: [String] = []
        for (name, value) in environment {
            if variables[name] != nil, name.hasPrefix("GATEHOUSE_") { overridden.append(name) }
            merged[name] = value
        }
        return (merged, overridden.sorted())
    }

    /// `errors` with each variable the file set named as its key and line.
    public func pointing(_ errors: ConfigurationErrors, overridden: [String] = []) -> ConfigurationErrors {
        ConfigurationErrors(issues: errors.issues.map { issue in
            guard var origin = origins[issue.variable], !overridden.contains(issue.variable) else { return issue }
            if issue.variable == "GATEHOUSE_ROUTES",
               let route = routeOrigins.last(where: { issue.message.contains(ConfigurationIssue.quote($0.prefix)) }) {
                origin = route.origin
            }
            return ConfigurationIssue(variable: "\(origin.key) (line \(origin.line), \(issue.variable))", message: issue.message)
        })
    }

    fileprivate mutating func route(_ prefix: String, key: String, line: Int) {
        routeOrigins.append((prefix, Origin(key: key, line: line)))
    }

    fileprivate mutating func set(_ variable: String, _ value: String, key: String, line: Int) {
        variables[variable] = value
        origins[variable] = Origin(key: key, line: line)
    }
}

/// Walks the tree, collecting variables and every problem at once.
private struct FileReader {
    let environment: [String: String]
    let readFile: (String) -> String?
    var file = ConfigurationFile()
    var issues: [ConfigurationIssue] = []

    init(environment: [String: String], readFile: @escaping (String) -> String?) {
        self.environment = environment
        self.readFile = readFile
    }

    mutating func fail(_ key: String, line: Int, _ message: String) {
        issues.append(ConfigurationIssue(variable: "\(key) (line \(line))", message: message))
    }

    /// The top level: `providers`, `routes`, and the variables.
    mutating func read(_ root: YAMLNode) {
        guard case .mapping(let pairs, _) = root else {
            if !root.isNull { fail("the file", line: root.line, "must be a map of keys (public_url: …, routes: …)") }
            return
        }
        for (key, line, value) in pairs {
            switch key {
            case "providers": readProviders(value, line: line)
            case "routes": readRoutes(value, line: line)
            default:
                guard let (variable, fromFile) = Self.variable(forKey: key, among: FileKeys.topLevelVariables) else {
                    fail(key, line: line, "is not a configuration key" + Self.suggestion(for: key, among: FileKeys.topLevelKeys))
                    continue
                }
                if let text = self.value(value, of: variable, key: key) {
                    store(variable, text, key: key, line: line, fromFile: fromFile)
                }
            }
        }
    }

    /// `providers: {NAME: {profile: …, issuer: …, client_id: …}}`: `GATEHOUSE_PROVIDERS` in the
    /// order written, and each provider's own variables.
    mutating func readProviders(_ node: YAMLNode, line: Int) {
        guard case .mapping(let providers, _) = node, !providers.isEmpty else {
            fail("providers", line: line, "must be a map of provider names to their keys (google: {profile: google, client_id: …})")
            return
        }
        var names: [String] = []
        for (name, nameLine, keys) in providers {
            guard ProviderSettings.isValidName(name) else {
                fail("providers.\(name)", line: nameLine, "is not a provider name (1–32 of a-z, 0-9 and -)")
                continue
            }
            names.append(name)
            guard case .mapping(let pairs, _) = keys else {
                fail("providers.\(name)", line: nameLine, "must be a map of that provider's keys (issuer, client_id, …)")
                continue
            }
            for (key, keyLine, value) in pairs {
                let path = "providers.\(name).\(key)"
                guard let (variable, fromFile) = Self.variable(forKey: key == "profile" ? "provider" : key, among: FileKeys.providerVariables)
                        ?? (key == "profile_file" ? ("GATEHOUSE_PROVIDER", true) : nil) else {
                    fail(path, line: keyLine, "is not a provider key" + Self.suggestion(for: key, among: FileKeys.providerKeys))
                    continue
                }
                let suffix = variable == "GATEHOUSE_PROVIDER" ? "PROFILE" : String(variable.dropFirst("GATEHOUSE_".count))
                if let text = self.value(value, of: variable, key: path) {
                    store(ProviderSettings.variablePrefix(for: name) + suffix, text, key: path, line: keyLine, fromFile: fromFile)
                }
            }
        }
        file.set("GATEHOUSE_PROVIDERS", names.joined(separator: ","), key: "providers", line: line)
    }

    /// `routes: [{prefix: /api, upstream: http://api:9000, auth: user, allow: …}]`: one
    /// `GATEHOUSE_ROUTES` entry each.
    mutating func readRoutes(_ node: YAMLNode, line: Int) {
        if case .scalar(let text, _, _) = node {
            // The environment's syntax, as is.
            if let text = interpolated(text, key: "routes", line: line) { file.set("GATEHOUSE_ROUTES", text, key: "routes", line: line) }
            return
        }
        guard case .sequence(let items, _) = node else {
            fail("routes", line: line, "must be a list of routes (- prefix: /api, upstream: http://api:9000)")
            return
        }
        var entries: [String] = []
        for (index, item) in items.enumerated() {
            if let entry = routeEntry(item, path: "routes[\(index)]") { entries.append(entry) }
        }
        file.set("GATEHOUSE_ROUTES", entries.joined(separator: ","), key: "routes", line: line)
    }

    mutating func routeEntry(_ item: YAMLNode, path: String) -> String? {
        guard case .mapping(let pairs, let line) = item else {
            fail(path, line: item.line, "must be a map with prefix, upstream and the route's options")
            return nil
        }
        var prefix: String?, upstream: String?
        var options: [String] = []
        for (key, keyLine, value) in pairs {
            let keyPath = "\(path).\(key)"
            switch key {
            case "prefix", "upstream":
                guard let text = plainText(value, key: keyPath) else { continue }
                guard !text.contains(","), !text.contains(";") else {
                    fail(keyPath, line: keyLine, "may not contain , or ;")
                    continue
                }
                if key == "prefix" { prefix = text } else { upstream = text }
            case "allow":
                for rule in allowRules(value, key: keyPath) { options.append("allow=" + rule) }
            default:
                guard RouteOptions.known.contains(key) else {
                    fail(keyPath, line: keyLine, "is not a route option" + Self.suggestion(for: key, among: ["prefix", "upstream"] + RouteOptions.known))
                    continue
                }
                // `providers` and `acr` take several values: a list is joined with `|`.
                guard let text = scalarText(value, key: keyPath, joiner: key == "scope" ? " " : "|") else { continue }
                guard !text.contains(","), !text.contains(";") else {
                    fail(keyPath, line: keyLine, "may not contain , or ;")
                    continue
                }
                options.append("\(key)=\(text)")
            }
        }
        guard let prefix else { fail(path, line: line, "has no prefix (the path the route serves, /api)"); return nil }
        guard let upstream else { fail(path, line: line, "has no upstream (the URL it forwards to)"); return nil }
        file.route(prefix, key: path, line: line)
        return ([prefix + "=" + upstream] + options).joined(separator: ";")
    }

    /// `allow:` as a rule (`groups:admin+email_domain:example.com`), a map (`{groups: [admin, ops],
    /// email_domain: example.com}`: every claim must hold), or a list of either (any one admits).
    mutating func allowRules(_ node: YAMLNode, key: String) -> [String] {
        switch node {
        case .sequence(let items, _):
            guard !items.isEmpty else {
                fail(key, line: node.line, "is an empty list: give at least one rule")
                return []
            }
            return items.enumerated().flatMap { index, item -> [String] in
                if case .sequence = item {
                    fail("\(key)[\(index)]", line: item.line, "must be a rule or a map of claims, not a list")
                    return []
                }
                return allowRules(item, key: "\(key)[\(index)]")
            }
        case .mapping(let claims, _):
            var terms: [String] = []
            for (claim, claimLine, values) in claims {
                guard let text = scalarText(values, key: "\(key).\(claim)", joiner: "|") else { continue }
                guard !text.contains(","), !text.contains(";"), !text.contains("+") else {
                    fail("\(key).\(claim)", line: claimLine, "may not contain , ; or +")
                    continue
                }
                terms.append("\(claim):\(text)")
            }
            return terms.isEmpty ? [] : [terms.joined(separator: "+")]
        case .scalar:
            guard let text = plainText(node, key: key) else { return [] }
            guard !text.contains(","), !text.contains(";") else {
                fail(key, line: node.line, "may not contain , or ; (give several rules as a list)")
                return []
            }
            return [text]
        }
    }

    /// The text of `variable`'s value: a list only where the variable is one (joined as its
    /// variable writes it), a single value everywhere else.
    mutating func value(_ node: YAMLNode, of variable: String, key: String) -> String? {
        if case .sequence = node {
            guard FileKeys.listVariables.contains(variable) else {
                fail(key, line: node.line, "must be a single value, not a list")
                return nil
            }
            return scalarText(node, key: key, joiner: variable == "GATEHOUSE_SCOPES" ? " " : ",")
        }
        return scalarText(node, key: key, joiner: ",")
    }

    /// A scalar's text, or a list of scalars joined by `joiner`.
    mutating func scalarText(_ node: YAMLNode, key: String, joiner: String) -> String? {
        switch node {
        case .scalar:
            return plainText(node, key: key)
        case .sequence(let items, _):
            var texts: [String] = []
            for item in items {
                guard case .scalar = item, let text = plainText(item, key: key) else {
                    if case .scalar = item {} else { fail(key, line: item.line, "must be a list of plain values") }
                    return nil
                }
                texts.append(text)
            }
            return texts.joined(separator: joiner)
        case .mapping:
            fail(key, line: node.line, "must be a value or a list of values, not a map")
            return nil
        }
    }

    /// A scalar's text with `${NAME}` replaced; nil (with the problem noted) for a null, a list or a map.
    mutating func plainText(_ node: YAMLNode, key: String) -> String? {
        guard case .scalar(let text, let line, _) = node else {
            fail(key, line: node.line, "must be a single value")
            return nil
        }
        guard !node.isNull else {
            fail(key, line: line, "has no value (leave the key out for its default)")
            return nil
        }
        return interpolated(text, key: key, line: line)
    }

    /// `text` with every `${NAME}` replaced by that environment variable.
    mutating func interpolated(_ text: String, key: String, line: Int) -> String? {
        guard text.contains("${") else { return text }
        var out = ""
        var rest = Substring(text)
        while let start = rest.firstRange(of: "${") {
            out += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                fail(key, line: line, "has ${ without a closing }")
                return nil
            }
            let name = String(rest[start.upperBound..<end])
            guard Self.isVariableName(name) else {
                fail(key, line: line, "has ${\(name)}, which is not an environment variable name (letters, digits, _)")
                return nil
            }
            guard let value = environment[name] else {
                fail(key, line: line, "needs ${\(name)}, which is not set in the environment")
                return nil
            }
            out += value
            rest = rest[rest.index(after: end)...]
        }
        return out + rest
    }

    /// Stores `variable`, reading the named file for a `*_file` key.
    mutating func store(_ variable: String, _ text: String, key: String, line: Int, fromFile: Bool) {
        guard fromFile else {
            file.set(variable, text, key: key, line: line)
            return
        }
        guard let contents = readFile(text) else {
            fail(key, line: line, "names \(ConfigurationIssue.quote(text)), which cannot be read")
            return
        }
        // A secret file usually ends with a newline its value does not have.
        var value = Substring(contents)
        while let last = value.last, last == "\n" || last == "\r" { value = value.dropLast() }
        file.set(variable, String(value), key: key, line: line)
    }

    /// The variable `key` names among `variables`, and whether it is the `_file` form.
    static func variable(forKey key: String, among variables: Set<String>) -> (String, Bool)? {
        guard key == key.lowercased() else { return nil }
        let upper = "GATEHOUSE_" + key.uppercased()
        if variables.contains(upper) { return (upper, false) }
        if key.hasSuffix("_file") {
            let base = String(upper.dropLast("_FILE".count))
            if variables.contains(base) { return (base, true) }
        }
        return nil
    }

    static func isVariableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(first >= 0x30 && first <= 0x39) else { return false }
        return name.utf8.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }
    }

    /// `" (did you mean KEY?)"` for the known key nearest `key`, when one is near.
    static func suggestion(for key: String, among known: [String]) -> String {
        let scored = known.map { ($0, EditDistance.between(key.lowercased(), $0)) }.min { $0.1 < $1.1 }
        guard let (best, distance) = scored, distance <= max(2, best.count / 3) else { return "" }
        return " (did you mean \(best)?)"
    }
}

/// Levenshtein distance, for "did you mean".
enum EditDistance {
    static func between(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

/// The keys the file knows, from the definitions the loader reads.
enum FileKeys {
    /// The variables whose value is a list (comma-separated, or for scopes space-separated).
    static let listVariables: Set<String> = [
        "GATEHOUSE_SCOPES", "GATEHOUSE_TRUSTED_PROXIES", "GATEHOUSE_CORS_ORIGINS", "GATEHOUSE_ALLOWED_EMAIL_DOMAINS",
        "GATEHOUSE_ALLOWED_EMAILS", "GATEHOUSE_ALLOWED_GROUPS", "GATEHOUSE_ID_TOKEN_ALGS", "GATEHOUSE_LOGIN_PARAMS",
        "GATEHOUSE_REQUIRE_CLAIMS",
    ]

    /// Every variable but the two the file writes as structures and the file's own.
    static let topLevelVariables: Set<String> = Set(GatehouseConfiguration.variables.map(\.name))
        .subtracting(["GATEHOUSE_PROVIDERS", "GATEHOUSE_ROUTES", "GATEHOUSE_CONFIG"])
    static let topLevelKeys: [String] = ["providers", "routes"] + topLevelVariables.map { key(of: $0) }.sorted()
    static let providerVariables = GatehouseConfiguration.providerVariableNames
    static let providerKeys: [String] = providerVariables.map { $0 == "GATEHOUSE_PROVIDER" ? "profile" : key(of: $0) }.sorted()

    static func key(of variable: String) -> String { String(variable.dropFirst("GATEHOUSE_".count)).lowercased() }

}
