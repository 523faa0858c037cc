import HTTPServer

/// The static security headers of the SPEC, added to every response.
public enum SecurityHeaders {
    /// Strict policy for HTML: only same-origin scripts, styles and connections; no framing,
    /// no `<base>` rewriting, forms post only to this origin.
    public static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

    /// Adds `X-Content-Type-Options`, `Referrer-Policy`, `X-Frame-Options`, and on HTML the
    /// `Content-Security-Policy`, each only when the response does not already carry it.
    public static func apply(to headers: inout HTTPHeaders, html: Bool) {
        addIfMissing(&headers, "X-Content-Type-Options", "nosniff")
        addIfMissing(&headers, "Referrer-Policy", "no-referrer")
        addIfMissing(&headers, "X-Frame-Options", "DENY")
        if html { addIfMissing(&headers, "Content-Security-Policy", contentSecurityPolicy) }
    }

    private static func addIfMissing(_ headers: inout HTTPHeaders, _ name: String, _ value: String) {
        if !headers.contains(name) { headers.add(name, value) }
    }
}
