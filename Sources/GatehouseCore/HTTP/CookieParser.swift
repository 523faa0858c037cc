import HTTPServer

/// Reads cookies from request `Cookie` headers (RFC 6265 §5.4 `name=value; name2=value2`).
///
/// Tolerant of spacing and of junk pairs (skipped), never crashing on hostile input. Names are
/// compared exactly (cookie names are case-sensitive). A value in double quotes is returned
/// without them.
public enum CookieParser {
    /// The first cookie called `name` across every `Cookie` header, in order; nil when absent.
    public static func value(named name: String, in headers: HTTPHeaders) -> String? {
        for header in headers.values("Cookie") {
            if let v = values(named: name, inHeader: header).first { return v }
        }
        return nil
    }

    /// Every cookie called `name`, in order. A sibling subdomain can plant a same-named cookie
    /// (without `__Host-`), so callers that look a value up server-side may try each.
    public static func values(named name: String, in headers: HTTPHeaders) -> [String] {
        headers.values("Cookie").flatMap { values(named: name, inHeader: $0) }
    }

    static func values(named name: String, inHeader header: String) -> [String] {
        var found: [String] = []
        for pair in header.split(separator: ";", omittingEmptySubsequences: true) {
            guard let eq = pair.firstIndex(of: "=") else { continue }
            let key = pair[..<eq].trimmingASCIIWhitespace()
            guard key == name else { continue }
            var value = pair[pair.index(after: eq)...].trimmingASCIIWhitespace()
            if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
            found.append(String(value))
        }
        return found
    }
}
