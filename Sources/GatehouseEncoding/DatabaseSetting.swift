/// Checks a `GATEHOUSE_DATABASE` value before anything opens it: a SQLite file path, or a
/// PostgreSQL URI that libpq will read as the operator meant. Messages never echo the value (it may
/// hold a password).
///
/// Two spellings used to go wrong silently: a password with a raw `/` (`postgres://u:pa/ss@h/db`),
/// which libpq reads as host `u`, port `pa` and then quotes "pa" in its error; and a libpq
/// `key=value` string (`host=db user=app password=…`), which is not a URI and so became the name of
/// a new SQLite file, password and all, leaving instances meant to share PostgreSQL each on a file
/// of its own.
public enum DatabaseSetting {
    /// The libpq keywords that mark a `key=value` connection string (libpq's "Parameter Key Words").
    private static let libpqKeywords: Set<String> = [
        "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "sslmode", "sslrootcert",
        "sslcert", "sslkey", "service", "connect_timeout", "application_name", "options", "target_session_attrs",
        "requiressl", "gssencmode", "channel_binding", "client_encoding",
    ]

    /// What is wrong with `value`, or nil when it can be used.
    public static func problem(in value: String) -> String? {
        let lower = value.lowercased()
        if let schemeEnd = lower.firstRange(of: "://") {
            let scheme = lower[..<schemeEnd.lowerBound]
            guard scheme == "postgres" || scheme == "postgresql" else {
                return "only postgres:// or postgresql:// URIs (or a SQLite file path) are supported; the value is not shown"
            }
            return uriProblem(value[schemeEnd.upperBound...])
        }
        if looksLikeKeywordString(lower) {
            return "looks like a libpq key=value connection string, which Gatehouse does not read (it would become "
                + "a SQLite file of that name); write it as a URI: postgres://USER:PASSWORD@HOST:5432/DBNAME?sslmode=require "
                + "(percent-encode reserved characters in the user and password). The value is not shown"
        }
        return nil
    }

    /// An `@` after the authority (before any `=` of the query) means the user or password holds
    /// an unescaped `/`, `?` or `#`: libpq would cut the authority there.
    private static func uriProblem(_ rest: Substring) -> String? {
        guard let boundary = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) else { return nil }
        let after = rest[boundary...]
        let beforeValues = after.firstIndex(of: "=").map { after[..<$0] } ?? after
        guard beforeValues.contains("@") else { return nil }
        return "the PostgreSQL URI's user name or password holds a '/', '?' or '#': percent-encode it "
            + "(%2F, %3F, %23), as libpq would otherwise read part of it as the host and port. The value is not shown"
    }

    /// `keyword = value` pairs separated by whitespace, the first keyword one of libpq's.
    private static func looksLikeKeywordString(_ lower: String) -> Bool {
        guard let eq = lower.firstIndex(of: "=") else { return false }
        let keyword = String(lower[..<eq]).trimmingWhitespace()
        return libpqKeywords.contains(keyword)
    }
}
