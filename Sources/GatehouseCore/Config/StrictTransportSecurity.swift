import HTTP1

/// The `Strict-Transport-Security` value (RFC 6797) Gatehouse sends on every answer when the
/// public URL is https (`GATEHOUSE_HSTS`): once a browser has seen it, it never again tries the
/// origin over plain http, so a network attacker cannot strip TLS on a later visit.
public enum StrictTransportSecurity {
    /// One year: the usual production value (and the minimum of browsers' preload lists).
    public static let defaultValue = "max-age=31536000"

    public enum ParseError: Error, Equatable, Sendable {
        case missingMaxAge
        case invalidMaxAge
        case unknownDirective(String)
        case repeatedDirective(String)
    }

    /// Checks `text` against `max-age=N[; includeSubDomains][; preload]` (directive names without
    /// case, RFC 6797 §6.1; `N` plain digits) and returns it normalised (`; ` between directives).
    public static func validated(_ text: String) throws(ParseError) -> String {
        var maxAge: Substring? = nil
        var includeSubDomains = false, preload = false
        for raw in text.split(separator: ";", omittingEmptySubsequences: false) {
            let directive = raw.trimmingASCIIWhitespace()
            // RFC 6797 §6.1 allows empty directives (`max-age=60;`).
            if directive.isEmpty { continue }
            let lower = directive.lowercased()
            if lower.hasPrefix("max-age=") {
                guard maxAge == nil else { throw .repeatedDirective("max-age") }
                let digits = directive.dropFirst("max-age=".count)
                guard !digits.isEmpty, digits.count <= 10, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                    throw .invalidMaxAge
                }
                maxAge = digits
            } else if lower == "includesubdomains" {
                guard !includeSubDomains else { throw .repeatedDirective("includeSubDomains") }
                includeSubDomains = true
            } else if lower == "preload" {
                guard !preload else { throw .repeatedDirective("preload") }
                preload = true
            } else if lower.hasPrefix("max-age") {
                throw .invalidMaxAge
            } else {
                throw .unknownDirective(String(directive))
            }
        }
        guard let maxAge else { throw .missingMaxAge }
        return "max-age=\(maxAge)" + (includeSubDomains ? "; includeSubDomains" : "") + (preload ? "; preload" : "")
    }
}

extension EnvironmentReader {
    /// `GATEHOUSE_HSTS`: the header value to send, or nil (http public URL, or `off`). A value is
    /// checked even on http, so a typo does not wait for the move to https to surface.
    mutating func strictTransportSecurity(publicURL: PublicURL?) -> String? {
        let name = "GATEHOUSE_HSTS"
        let secure = publicURL?.isSecure ?? false
        guard let text = value(name) else { return secure ? StrictTransportSecurity.defaultValue : nil }
        if text.lowercased() == "off" { return nil }
        do {
            let value = try StrictTransportSecurity.validated(text)
            return secure ? value : nil
        } catch {
            let reason: String
            switch error {
            case .missingMaxAge: reason = "needs max-age=SECONDS"
            case .invalidMaxAge: reason = "has an invalid max-age (max-age=SECONDS, digits only)"
            case .unknownDirective(let d): reason = "has the unknown directive \(ConfigurationIssue.quote(d))"
            case .repeatedDirective(let d): reason = "repeats \(d)"
            }
            fail(name, "\(ConfigurationIssue.quote(text)) \(reason); use max-age=N[; includeSubDomains][; preload] or off")
            return nil
        }
    }
}
