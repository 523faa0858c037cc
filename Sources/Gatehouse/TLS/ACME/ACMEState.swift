import GatehouseCore
import GatehouseEncoding
import GatehouseOIDC

/// What the store keeps for one ACME directory and set of names (sealed, `CertificateRecordStore`):
/// the account's key and URL, and the certificate chain with its key and lifetime once issued.
struct ACMEState: Equatable, Sendable {
    var accountKey: [UInt8]
    var accountURL: String?
    var chainPEM: [UInt8]?
    var keyPEM: [UInt8]?
    /// When the chain was obtained, and its leaf's `notAfter` (Unix seconds).
    var issuedAt: Int64 = 0
    var notAfter: Int64 = 0

    /// The record's name: one per directory and set of names, so changing either orders afresh.
    static func recordName(_ settings: ACMESettings) -> String {
        "acme " + settings.directory + " " + settings.domains.joined(separator: ",")
    }

    /// When the certificate is renewed: two thirds into its lifetime (RFC 8555 leaves it to the
    /// client; Let's Encrypt's 90 days give 30 days of retries, as certbot's default does).
    var renewalTime: Int64? {
        guard chainPEM != nil else { return nil }
        return issuedAt + (notAfter - issuedAt) * 2 / 3
    }

    func needsOrder(now: Int64) -> Bool {
        guard let renewalTime else { return true }
        return now >= renewalTime
    }

    /// Seconds to wait after the `failures`-th failure in a row: 30 s doubling to an hour.
    static func backoff(failures: Int) -> Int64 {
        min(3600, 30 << Int64(min(max(failures - 1, 0), 7)))
    }

    var encoded: [UInt8] {
        var object: [String: JSONValue] = ["account_key": .string(Base64URL.encode(accountKey))]
        if let accountURL { object["account_url"] = .string(accountURL) }
        if let chainPEM, let keyPEM {
            object["chain"] = .string(String(decoding: chainPEM, as: UTF8.self))
            object["key"] = .string(String(decoding: keyPEM, as: UTF8.self))
            // As strings: the writer leaves large numbers to JSONEncoder.
            object["issued_at"] = .string(String(issuedAt))
            object["not_after"] = .string(String(notAfter))
        }
        return JSONValueWriter.sortedKeys(object) ?? []
    }

    init(accountKey: [UInt8]) { self.accountKey = accountKey }

    init?(decoding bytes: [UInt8]) {
        guard let object = (try? JSONValue.parse(bytes))?.objectValue,
              let key = object["account_key"]?.stringValue.flatMap({ Base64URL.decode($0) })
        else { return nil }
        accountKey = key
        accountURL = object["account_url"]?.stringValue
        if let chain = object["chain"]?.stringValue, let privateKey = object["key"]?.stringValue,
           let issued = object["issued_at"]?.stringValue.flatMap({ Int64($0) }),
           let notAfter = object["not_after"]?.stringValue.flatMap({ Int64($0) }) {
            chainPEM = Array(chain.utf8)
            keyPEM = Array(privateKey.utf8)
            issuedAt = issued
            self.notAfter = notAfter
        }
    }
}
