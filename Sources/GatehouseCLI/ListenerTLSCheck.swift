import GatehouseCore
import TLSTransport

/// `gatehouse check`'s lines for the HTTPS listener: the certificate files as `serve` would read them
/// (a key that is not the certificate's fails here as it would stop `serve`), or the ACME account.
enum ListenerTLSCheck {
    /// The lines, and whether one of them is a failure.
    static func lines(for settings: ListenerTLSSettings, listen: ListenAddress, now: Int64) -> (lines: [String], failed: Bool) {
        var lines: [String] = []
        var failed = false
        if let certificate = settings.certificateFile, let key = settings.keyFile {
            do {
                let served = try ServerCertificate(files: .init(certificate: certificate, key: key),
                                                   ticketKeys: { _ in [UInt8](repeating: 0, count: 80) }, wallClock: { now })
                let days = ((served.notAfter ?? now) - now) / 86_400
                lines.append("\(days < 14 ? "WARN" : "ok  ") HTTPS on \(listen) with \(certificate) (expires in \(days) days)")
            } catch {
                lines.append("FAIL HTTPS certificate: \(error.description) (GATEHOUSE_TLS_CERT \(certificate), GATEHOUSE_TLS_KEY \(key))")
                failed = true
            }
        } else if let acme = settings.acme {
            lines.append("ok   HTTPS on \(listen) with a certificate from ACME \(acme.directory) for \(acme.domains.joined(separator: ", "))")
            if settings.redirectListen == nil {
                lines.append("     no redirect listener: names are proved with tls-alpn-01 on \(listen) (the CA must reach this port)")
            }
        }
        if let redirect = settings.redirectListen {
            lines.append("     redirect:      http on \(redirect) → 308 to https (and ACME http-01 challenges)")
        }
        return (lines, failed)
    }
}
