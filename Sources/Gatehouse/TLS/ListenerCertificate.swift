import Crypto
import GatehouseCore
import GatehouseTime
import Logging
import TLSTransport

/// The HTTPS listener's certificate in the running gateway: made from `GATEHOUSE_TLS_CERT` and
/// `_KEY` at start (a bad file stops the start, naming its variable), watched for changes, and its
/// session tickets keyed from the secret key so instances sharing `GATEHOUSE_SECRET_KEY` resume each
/// other's sessions.
enum ListenerCertificate {
    /// How often the files are looked at.
    static let refreshInterval: Duration = .seconds(2)

    /// The certificate the settings ask for: from the files, or (ACME) one to be installed once
    /// ordered; nil on a plain listener.
    static func make(_ settings: ListenerTLSSettings, secretKey: [UInt8], clock: any GatewayClock) throws(GatewayStartError) -> ServerCertificate? {
        let keys = ticketKeys(secretKey)
        let wall: @Sendable () -> Int64 = { clock.unixSeconds() }
        if let certificate = settings.certificateFile, let key = settings.keyFile {
            do {
                return try ServerCertificate(files: .init(certificate: certificate, key: key), ticketKeys: keys, wallClock: wall)
            } catch {
                throw .configuration("\(variable(blamedFor: error)): \(error)")
            }
        }
        if let acme = settings.acme {
            return ServerCertificate(awaitingInstall: keys, wallClock: wall, placeholderName: acme.domains.first ?? "gatehouse")
        }
        return nil
    }

    /// The variable an operator must fix for `error`.
    static func variable(blamedFor error: TLSServerContextError) -> String {
        if case .certificate = error { return "GATEHOUSE_TLS_CERT" }
        return "GATEHOUSE_TLS_KEY"
    }

    /// Looks at the files every `refreshInterval` (and turns the ticket period) until cancelled.
    static func watch(_ certificate: ServerCertificate, logger: Logger) -> Task<Void, Never> {
        Task.detached {
            while !Task.isCancelled {
                try? await Task.sleep(for: refreshInterval)
                switch certificate.refresh() {
                case .unchanged:
                    break
                case .rotated:
                    logger.debug("TLS session-ticket key rotated")
                case .reloaded:
                    logger.info("TLS certificate reloaded", metadata: [
                        "tls.certificate": "\(certificate.files?.certificate ?? "")",
                        "tls.not_after": "\(certificate.notAfter ?? 0)",
                    ])
                case .refused(let error):
                    logger.error("TLS certificate files changed but cannot serve; the previous certificate stays", metadata: [
                        "variable": "\(variable(blamedFor: error))", "error": "\(error)",
                    ])
                }
            }
        }
    }

    /// Ticket keys for a period: 80 bytes (name, AES-256 key, HMAC-SHA256 key) derived from the
    /// secret key, so every instance with that key computes the same ones and none is stored.
    static func ticketKeys(_ secretKey: [UInt8]) -> @Sendable (Int64) -> [UInt8] {
        let secret = SymmetricKey(data: secretKey)
        return { period in
            var info = Array("gatehouse tls session tickets ".utf8)
            withUnsafeBytes(of: period.bigEndian) { info += $0 }
            let derived = HKDF<SHA256>.deriveKey(inputKeyMaterial: secret, info: info, outputByteCount: 80)
            return derived.withUnsafeBytes { Array($0) }
        }
    }
}
