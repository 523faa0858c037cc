/// How the public listener faces the browser (SPEC "Facing the browser directly"): HTTPS from
/// certificate files or from an ACME account, and a plain listener beside it that redirects to
/// HTTPS and answers ACME http-01 challenges.
public struct ListenerTLSSettings: Sendable, Equatable {
    /// `GATEHOUSE_TLS_CERT`: PEM chain, leaf first.
    public var certificateFile: String?
    /// `GATEHOUSE_TLS_KEY`: the certificate's PEM private key.
    public var keyFile: String?
    /// `GATEHOUSE_HTTP_REDIRECT_LISTEN`.
    public var redirectListen: ListenAddress?
    /// `GATEHOUSE_ACME_*`.
    public var acme: ACMESettings?

    public init(certificateFile: String? = nil, keyFile: String? = nil, redirectListen: ListenAddress? = nil, acme: ACMESettings? = nil) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.redirectListen = redirectListen
        self.acme = acme
    }

    /// Whether the public listener speaks HTTPS.
    public var isEnabled: Bool { certificateFile != nil || acme != nil }
}

/// An ACME account and the names its certificate covers (RFC 8555).
public struct ACMESettings: Sendable, Equatable {
    /// `GATEHOUSE_ACME_DIRECTORY`: the CA's directory URL.
    public var directory: String
    /// `GATEHOUSE_ACME_DOMAINS`: the certificate's names, the first its subject.
    public var domains: [String]
    /// `GATEHOUSE_ACME_EMAIL`: the account's contact, if any.
    public var email: String?
    /// `GATEHOUSE_ACME_CA_BUNDLE`: the PEM bundle the ACME server is verified with (default: the system's).
    public var caBundle: String?

    public init(directory: String, domains: [String], email: String?, caBundle: String?) {
        self.directory = directory
        self.domains = domains
        self.email = email
        self.caBundle = caBundle
    }
}

extension EnvironmentReader {
    /// The public listener, `/metrics`' own, and HTTPS with its redirect listener. With HTTPS and
    /// no `GATEHOUSE_LISTEN`: 8443, and the redirect listener on 8080 (the image's ports).
    mutating func listeners() -> (listen: ListenAddress?, metrics: ListenAddress?, tls: ListenerTLSSettings) {
        let speaksTLS = value("GATEHOUSE_TLS_CERT") != nil || value("GATEHOUSE_ACME_DIRECTORY") != nil
        let listen = self.listen(default: speaksTLS ? "0.0.0.0:8443" : "0.0.0.0:8080")
        let metricsListen = self.metricsListen(beside: listen)
        let tls = listenerTLS(listen: listen, metricsListen: metricsListen,
                              defaultRedirect: speaksTLS && value("GATEHOUSE_LISTEN") == nil ? "0.0.0.0:8080" : nil)
        return (listen, metricsListen, tls)
    }

    /// `GATEHOUSE_TLS_*`, `GATEHOUSE_HTTP_REDIRECT_LISTEN` and `GATEHOUSE_ACME_*`. The files are
    /// only named here; `serve` reads them at start (a key that is not the certificate's stops it
    /// there, naming `GATEHOUSE_TLS_KEY`).
    mutating func listenerTLS(listen: ListenAddress?, metricsListen: ListenAddress?, defaultRedirect: String?) -> ListenerTLSSettings {
        var settings = ListenerTLSSettings()
        settings.certificateFile = value("GATEHOUSE_TLS_CERT")
        settings.keyFile = value("GATEHOUSE_TLS_KEY")
        if (settings.certificateFile == nil) != (settings.keyFile == nil) {
            let missing = settings.certificateFile == nil ? "GATEHOUSE_TLS_CERT" : "GATEHOUSE_TLS_KEY"
            let given = settings.certificateFile == nil ? "GATEHOUSE_TLS_KEY" : "GATEHOUSE_TLS_CERT"
            fail(missing, "required with \(given): a certificate and its key go together")
        }
        settings.acme = acme()
        if settings.acme != nil && settings.certificateFile != nil {
            fail("GATEHOUSE_ACME_DIRECTORY", "cannot be used with GATEHOUSE_TLS_CERT: the certificate comes from one or the other")
        }
        let redirectSetting = value("GATEHOUSE_HTTP_REDIRECT_LISTEN") ?? defaultRedirect
        if let redirectSetting, redirectSetting != "none",
           let redirect = self.listen("GATEHOUSE_HTTP_REDIRECT_LISTEN", default: redirectSetting) {
            for (other, name) in [(listen, "GATEHOUSE_LISTEN"), (metricsListen, "GATEHOUSE_METRICS_LISTEN")] {
                if let other, other.port == redirect.port, redirect.port != 0 {
                    fail("GATEHOUSE_HTTP_REDIRECT_LISTEN", "uses the port of \(name) (\(redirect.port)): give it a port of its own")
                }
            }
            settings.redirectListen = redirect
        }
        return settings
    }

    private mutating func acme() -> ACMESettings? {
        let names = ["GATEHOUSE_ACME_DOMAINS", "GATEHOUSE_ACME_EMAIL", "GATEHOUSE_ACME_CA_BUNDLE"]
        guard let directory = value("GATEHOUSE_ACME_DIRECTORY") else {
            for name in names where value(name) != nil { fail(name, "needs GATEHOUSE_ACME_DIRECTORY") }
            return nil
        }
        switch Result(catching: { () throws(AbsoluteURL.ParseError) in try AbsoluteURL(parsing: directory) }) {
        case .success(let url) where url.scheme == "https":
            break
        case .success:
            fail("GATEHOUSE_ACME_DIRECTORY", "must be an https URL (RFC 8555 §6.1)")
        case .failure(let error):
            fail("GATEHOUSE_ACME_DIRECTORY", "\(error)")
        }
        let domains = (value("GATEHOUSE_ACME_DOMAINS") ?? "").split(separator: ",").map {
            String($0.trimmingConfigurationWhitespace()).lowercased()
        }.filter { !$0.isEmpty }
        if domains.isEmpty { fail("GATEHOUSE_ACME_DOMAINS", "required with GATEHOUSE_ACME_DIRECTORY: the names the certificate covers") }
        for domain in domains where !Self.isDNSName(domain) {
            fail("GATEHOUSE_ACME_DOMAINS", "\"\(domain)\" is not a DNS name (letters, digits, hyphens and dots; no wildcard: http-01 cannot prove one)")
        }
        let email = value("GATEHOUSE_ACME_EMAIL")
        if let email, email.utf8.filter({ $0 == UInt8(ascii: "@") }).count != 1 || email.contains(where: { $0 == " " || $0 == "," }) {
            fail("GATEHOUSE_ACME_EMAIL", "is not an email address")
        }
        return ACMESettings(directory: directory, domains: domains, email: email, caBundle: value("GATEHOUSE_ACME_CA_BUNDLE"))
    }

    static func isDNSName(_ name: String) -> Bool {
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard name.utf8.count <= 253, labels.count >= 1 else { return false }
        return labels.allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { URLBytes.isDigit($0) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D }
        }
    }
}
