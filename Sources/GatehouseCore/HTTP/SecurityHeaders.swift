import HTTP1

/// The static security headers of the SPEC, added to every response.
public enum SecurityHeaders {
    /// Strict policy for HTML: only same-origin scripts, styles and connections; no framing,
    /// no `<base>` rewriting, forms post only to this origin.
    public static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

    /// Adds `X-Content-Type-Options`, `Referrer-Policy`, `X-Frame-Options`, on HTML the
    /// `Content-Security-Policy`, and `Strict-Transport-Security` when a value is given (the public
    /// URL is https: `GatehouseConfiguration.strictTransportSecurity`), each only when the response
    /// does not already carry it. The values are prebuilt strings: nothing is formatted per answer.
    public static func apply(to headers: inout HTTPHeaders, html: Bool, strictTransportSecurity: String? = nil) {
        // One pass to see what is there; nothing is added (and the fields not copied) when all are.
        var hasTypeOptions = false, hasReferrer = false, hasFrame = false, hasCSP = !html
        var hasHSTS = strictTransportSecurity == nil
        for field in headers.fields {
            let name = field.name
            switch name.utf8.count {
            case 22: hasTypeOptions = hasTypeOptions || name.asciiCaseInsensitiveEquals("X-Content-Type-Options")
            case 15:
                hasReferrer = hasReferrer || name.asciiCaseInsensitiveEquals("Referrer-Policy")
                hasFrame = hasFrame || name.asciiCaseInsensitiveEquals("X-Frame-Options")
            case 23: hasCSP = hasCSP || name.asciiCaseInsensitiveEquals("Content-Security-Policy")
            case 25: hasHSTS = hasHSTS || name.asciiCaseInsensitiveEquals("Strict-Transport-Security")
            default: break
            }
        }
        let missing = (hasTypeOptions ? 0 : 1) + (hasReferrer ? 0 : 1) + (hasFrame ? 0 : 1) + (hasCSP ? 0 : 1)
            + (hasHSTS ? 0 : 1)
        guard missing > 0 else { return }
        // One copy of a shared list (a static file's cached headers) with room for all of them,
        // instead of a copy and then a regrowth.
        headers.reserveCapacity(headers.count + missing)
        if !hasTypeOptions { headers.add(Fields.typeOptions) }
        if !hasReferrer { headers.add(Fields.referrer) }
        if !hasFrame { headers.add(Fields.frame) }
        if !hasCSP { headers.add(Fields.contentSecurityPolicy) }
        if !hasHSTS, let strictTransportSecurity { headers.add("Strict-Transport-Security", strictTransportSecurity) }
    }

    /// Checked once (`HTTPField.Checked`), so writing them on every answer is a copy.
    private enum Fields {
        static let typeOptions = HTTPField.Checked(name: "X-Content-Type-Options", value: "nosniff")!
        static let referrer = HTTPField.Checked(name: "Referrer-Policy", value: "no-referrer")!
        static let frame = HTTPField.Checked(name: "X-Frame-Options", value: "DENY")!
        static let contentSecurityPolicy = HTTPField.Checked(name: "Content-Security-Policy",
                                                             value: SecurityHeaders.contentSecurityPolicy)!
    }

    /// True when the fields declare an HTML body (`Content-Type: text/html…`, any case).
    public static func isHTML(_ headers: HTTPHeaders) -> Bool {
        guard let type = headers["Content-Type"] else { return false }
        // On the contiguous bytes: the generic `elementsEqual` over `prefix(_:)` cost about 500
        // instructions on every proxied answer, a Substring and its comparison about 600.
        return type.utf8.withContiguousStorageIfAvailable { bytes in
            let prefix: StaticString = "text/html"
            guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
            for i in 0..<prefix.utf8CodeUnitCount {
                let b = bytes[i]
                if (b >= 65 && b <= 90 ? b | 0x20 : b) != prefix.utf8Start[i] { return false }
            }
            return true
        } ?? type.lowercased().hasPrefix("text/html")
    }
}
