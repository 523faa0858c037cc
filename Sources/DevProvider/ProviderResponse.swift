import FoundationEssentials
import HTTP1

/// Builds the provider's answers. Every answer is `Cache-Control: no-store`: codes, tokens and
/// login pages must never sit in a cache (RFC 6749 §5.1).
enum ProviderResponse {
    static func json(status: Int = 200, _ object: some Encodable) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // OAuth and OpenID Connect name every JSON member in snake_case (`access_token`, `jwks_uri`):
        // the Swift names convert, so no payload needs its own coding keys.
        encoder.keyEncodingStrategy = .convertToSnakeCase
        // Encoding plain dictionaries, strings and numbers cannot fail; an empty object is the
        // fallback rather than a crash.
        let body = (try? encoder.encode(object)).map(Array.init) ?? Array("{}".utf8)
        return HTTPResponse(status: status, headers: headers(contentType: "application/json"), body: body)
    }

    /// An HTML page of the provider: no external resources, inline style only, never framed.
    static func html(status: Int = 200, _ page: String) -> HTTPResponse {
        var headers = headers(contentType: "text/html; charset=utf-8")
        headers.add("Content-Security-Policy",
                    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'")
        headers.add("X-Frame-Options", "DENY")
        headers.add("Referrer-Policy", "no-referrer")
        return HTTPResponse(status: status, headers: headers, body: page)
    }

    static func redirect(to location: String) -> HTTPResponse {
        var headers = headers(contentType: nil)
        headers.add("Location", location)
        headers.add("Referrer-Policy", "no-referrer")
        return HTTPResponse(status: 302, headers: headers)
    }

    static func plain(status: Int, _ text: String, extra: [(String, String)] = []) -> HTTPResponse {
        var headers = headers(contentType: "text/plain; charset=utf-8")
        for (name, value) in extra { headers.add(name, value) }
        return HTTPResponse(status: status, headers: headers, body: text + "\n")
    }

    static func methodNotAllowed(allow: String) -> HTTPResponse {
        plain(status: 405, "Method Not Allowed", extra: [("Allow", allow)])
    }

    private static func headers(contentType: String?) -> HTTPHeaders {
        var headers = HTTPHeaders()
        if let contentType { headers.add("Content-Type", contentType) }
        headers.add("Cache-Control", "no-store")
        headers.add("Pragma", "no-cache")
        headers.add("X-Content-Type-Options", "nosniff")
        return headers
    }
}
