/// Finds and hides the password of a connection URI (`postgres://user:password@host/db?password=…`)
/// so that the URI can be shown in logs, errors and `gatehouse check` without it.
///
/// The userinfo is where libpq looks for it (RFC 3986 §3.2.1): after `://`, before an `@` that
/// comes before any `/`; the last such `@` is taken, so that an unescaped `@` inside a password
/// hides the rest of it too. When the text has an `@` only after a `/` (a password containing an
/// unescaped `/`), everything up to the last `@` is hidden: the rule may hide too much, never too
/// little. Query parameters named `password` or `sslpassword` (keys
/// percent-decoded, as libpq decodes them) are hidden too.
///
/// For example: `URIPassword.redacting("postgres://app:s3cret@db/gh")` is `postgres://app:***@db/gh`.
public enum URIPassword {
    /// What replaces a password.
    public static let mask = "***"

    private static let secretQueryKeys: Set<String> = ["password", "sslpassword"]

    /// `uri` with every password replaced by `***`; any text without `://` is returned unchanged
    /// (a file path).
    public static func redacting(_ uri: String) -> String {
        guard let parts = Parts(uri) else { return uri }
        var out = parts.scheme + "://"
        switch parts.userinfo {
        case .none:
            break
        case .user(let user, let hasPassword):
            out += user + (hasPassword ? ":" + mask : "") + "@"
        case .unparsable:
            out += mask + "@"
        }
        out += parts.hostAndPath
        if let query = parts.query {
            out += "?" + query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                guard let eq = pair.firstIndex(of: "="), isSecretKey(pair[..<eq]) else { return String(pair) }
                return String(pair[...eq]) + mask
            }.joined(separator: "&")
        }
        return out
    }

    /// The passwords `uri` carries, as written and percent-decoded (empty ones left out), for
    /// scrubbing a message that may echo them (libpq quotes the malformed part of a URI).
    public static func secrets(in uri: String) -> [String] {
        guard let parts = Parts(uri) else { return [] }
        var raw: [String] = []
        switch parts.userinfo {
        case .user(let user, true):
            raw.append(String(parts.userinfoText.dropFirst(user.count + 1)))
        case .unparsable:
            raw.append(parts.userinfoText)
        default:
            break
        }
        for pair in (parts.query ?? "").split(separator: "&") {
            if let eq = pair.firstIndex(of: "="), isSecretKey(pair[..<eq]) {
                raw.append(String(pair[pair.index(after: eq)...]))
            }
        }
        var all: [String] = []
        for value in raw where !value.isEmpty {
            all.append(value)
            if let decoded = PercentEncoding.decodeString(value), !decoded.isEmpty, decoded != value {
                all.append(decoded)
            }
        }
        // Longest first, so that scrubbing a long secret is not defeated by a shorter one inside it.
        return all.sorted { $0.count > $1.count }
    }

    /// `text` with every password of `uri` replaced by `***`.
    public static func scrubbing(_ text: String, of uri: String) -> String {
        var result = text
        for secret in secrets(in: uri) {
            result = result.replacing(secret, with: mask)
        }
        return maskingOptionValues(result)
    }

    /// libpq's connection-option errors quote the value they could not use (`invalid port number:
    /// "pa"`, `invalid integer value "x" for connection option "port"`); when a URI was cut in an
    /// unexpected place that value may be part of a password, so in lines that start `invalid` the
    /// first quoted value is hidden (the option's name, quoted last, stays).
    static func maskingOptionValues(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.hasPrefix("invalid "), let open = line.firstIndex(of: "\""),
                  let close = line[line.index(after: open)...].firstIndex(of: "\"") else { return String(line) }
            return String(line[...open]) + mask + String(line[close...])
        }.joined(separator: "\n")
    }

    private static func isSecretKey(_ key: Substring) -> Bool {
        let decoded = PercentEncoding.decodeString(key) ?? String(key)
        return secretQueryKeys.contains(decoded.lowercased())
    }

    /// A URI cut where libpq cuts it.
    private struct Parts {
        enum Userinfo {
            case none
            case user(String, hasPassword: Bool)
            /// An `@` after the first `/`: where the userinfo ends is unclear, so all of it is secret.
            case unparsable
        }

        let scheme: String
        let userinfo: Userinfo
        let userinfoText: String
        let hostAndPath: String
        let query: String?

        init?(_ uri: String) {
            guard let separator = uri.firstRange(of: "://") else { return nil }
            scheme = String(uri[..<separator.lowerBound])
            guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else { return nil }
            var rest = uri[separator.upperBound...]
            let beforeSlash = rest.prefix { $0 != "/" }
            if let at = beforeSlash.lastIndex(of: "@") {
                userinfoText = String(rest[..<at])
                if let colon = userinfoText.firstIndex(of: ":") {
                    userinfo = .user(String(userinfoText[..<colon]), hasPassword: true)
                } else {
                    userinfo = .user(userinfoText, hasPassword: false)
                }
                rest = rest[rest.index(after: at)...]
            } else if let at = rest.lastIndex(of: "@") {
                userinfoText = String(rest[..<at])
                userinfo = .unparsable
                rest = rest[rest.index(after: at)...]
            } else {
                userinfoText = ""
                userinfo = .none
            }
            if let question = rest.firstIndex(of: "?") {
                hostAndPath = String(rest[..<question])
                query = String(rest[rest.index(after: question)...])
            } else {
                hostAndPath = String(rest)
                query = nil
            }
        }
    }
}
