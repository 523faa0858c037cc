import HTTP1

/// The static security headers of the SPEC, added to every response.
public enum SecurityHeaders {
    /// Strict policy for HTML: only same-origin scripts, styles and connections; no framing,
    /// no `<base>` rewriting, forms post only to this origin. Images may also come from any https
    /// origin: the providers' profile pictures (Google's and Facebook's own hosts). `GATEHOUSE_CSP`
    /// replaces the whole policy.
    public static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

    /// The policy field for `value` (`GATEHOUSE_CSP`); nil when it is not a valid field value.
    public static func contentSecurityPolicyField(_ value: String) -> HTTPField.Checked? {
        HTTPField.Checked(name: "Content-Security-Policy", value: value)
    }

    /// Adds `X-Content-Type-Options`, `Referrer-Policy`, `X-Frame-Options`, on HTML the
    /// `Content-Security-Policy`, and `Strict-Transport-Security` when a value is given (the public
    /// URL is https: `GatehouseConfiguration.strictTransportSecurity`), each only when the response
    /// does not already carry it. The values are prebuilt strings: nothing is formatted per answer.
    public static func apply(to headers: inout HTTPHeaders, html: Bool, strictTransportSecurity: String? = nil,
                             contentSecurityPolicy: HTTPField.Checked? = nil) {
        // One pass to see what is there; nothing is added (and the fields not copied) when all are.
        var present = Present(scanning: headers)
        present.html = html
        apply(to: &headers, present: present, strictTransportSecurity: strictTransportSecurity,
              contentSecurityPolicy: contentSecurityPolicy)
    }

    /// As `apply(to:html:strictTransportSecurity:)`, with what the fields hold already noted
    /// (`Present`, by whoever built them: the proxy notes the upstream's fields as it keeps them,
    /// instead of a second pass over them and a look-up of `Content-Type`). HTML when `present.html`.
    /// `contentSecurityPolicy`: the configured policy's field, nil for the default.
    public static func apply(to headers: inout HTTPHeaders, present: Present, strictTransportSecurity: String? = nil,
                             contentSecurityPolicy: HTTPField.Checked? = nil) {
        let hasCSP = present.contentSecurityPolicy || !present.html
        let hasHSTS = present.strictTransportSecurity || strictTransportSecurity == nil
        let missing = (present.typeOptions ? 0 : 1) + (present.referrer ? 0 : 1) + (present.frame ? 0 : 1)
            + (hasCSP ? 0 : 1) + (hasHSTS ? 0 : 1)
        guard missing > 0 else { return }
        // One copy of a shared list (a static file's cached headers) with room for all of them,
        // instead of a copy and then a regrowth.
        headers.reserveCapacity(headers.count + missing)
        if !present.typeOptions && !present.referrer && !present.frame {
            headers.add(Fields.usual)  // the three every answer gets, unless it has them: one copy
        } else {
            if !present.typeOptions { headers.add(Fields.typeOptions) }
            if !present.referrer { headers.add(Fields.referrer) }
            if !present.frame { headers.add(Fields.frame) }
        }
        if !hasCSP { headers.add(contentSecurityPolicy ?? Fields.contentSecurityPolicy) }
        if !hasHSTS, let strictTransportSecurity { headers.add("Strict-Transport-Security", strictTransportSecurity) }
    }

    /// Which of the security headers a list of fields has, and whether its (first) `Content-Type`
    /// is HTML, noted one field at a time.
    public struct Present: Sendable {
        var typeOptions = false, referrer = false, frame = false
        var contentSecurityPolicy = false, strictTransportSecurity = false
        private var sawContentType = false
        /// Whether the first `Content-Type` noted is `text/html` (what `isHTML` answers).
        public internal(set) var html = false

        public init() {}

        init(scanning headers: HTTPHeaders) {
            headers.forEachField { _, name, value in
                note(name: name, value: value)
                return true
            }
        }

        /// Notes one field, given as its name and value bytes.
        @inline(__always)
        public mutating func note(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
            switch name.count {
            case 12:
                if !sawContentType && ByteSearch.equalIgnoringASCIICase(name, "Content-Type") {
                    sawContentType = true
                    html = SecurityHeaders.isHTML(contentType: value)
                }
            case 22: typeOptions = typeOptions || ByteSearch.equalIgnoringASCIICase(name, "X-Content-Type-Options")
            case 15:
                referrer = referrer || ByteSearch.equalIgnoringASCIICase(name, "Referrer-Policy")
                frame = frame || ByteSearch.equalIgnoringASCIICase(name, "X-Frame-Options")
            case 23: contentSecurityPolicy = contentSecurityPolicy || ByteSearch.equalIgnoringASCIICase(name, "Content-Security-Policy")
            case 25: strictTransportSecurity = strictTransportSecurity
                || ByteSearch.equalIgnoringASCIICase(name, "Strict-Transport-Security")
            default: break
            }
        }
    }

    private enum Fields {
        static let typeOptions = HTTPField.Checked(name: "X-Content-Type-Options", value: "nosniff")!
        static let referrer = HTTPField.Checked(name: "Referrer-Policy", value: "no-referrer")!
        static let frame = HTTPField.Checked(name: "X-Frame-Options", value: "DENY")!
        static let usual = HTTPField.CheckedGroup([typeOptions, referrer, frame])
        static let contentSecurityPolicy = HTTPField.Checked(name: "Content-Security-Policy",
                                                             value: SecurityHeaders.contentSecurityPolicy)!
    }

    /// True when the fields declare an HTML body (`Content-Type: text/html…`, any case).
    public static func isHTML(_ headers: HTTPHeaders) -> Bool {
        guard let type = headers["Content-Type"] else { return false }
        return isHTML(contentType: type)
    }

    /// Whether a `Content-Type` value is `text/html` (any case, any parameters).
    static func isHTML(contentType type: String) -> Bool {
        var type = type
        return type.withUTF8 { isHTML(contentType: $0) }
    }

    static func isHTML(contentType bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let prefix: StaticString = "text/html"
        guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
        return ByteSearch.equalIgnoringASCIICase(UnsafeBufferPointer(rebasing: bytes[..<prefix.utf8CodeUnitCount]), prefix)
    }
}
