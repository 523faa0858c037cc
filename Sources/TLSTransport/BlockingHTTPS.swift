import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One HTTPS exchange on the calling thread, over a connection of its own: for the ACME client,
/// which talks to its CA a few times a month from a background thread and may trust a bundle of its
/// own (`GATEHOUSE_ACME_CA_BUNDLE`). Never on an event loop: every step blocks, each for at most
/// the timeout.
public enum BlockingHTTPS {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Sends `request` (a whole HTTP/1.1 request saying `Connection: close`) to `host:port`,
    /// verified against the PEM `bundle`, and returns every byte the server sent until it closed.
    public static func exchange(host: String, port: Int, bundle: String, request: [UInt8],
                                timeoutSeconds: Int) throws(Failure) -> [UInt8] {
        var response: UnsafeMutablePointer<UInt8>?
        var reason = [CChar](repeating: 0, count: 256)
        let length = request.withUnsafeBytes { bytes in
            gatehouse_https_exchange(host, String(port), bundle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                     bytes.count, Int32(timeoutSeconds), &response, &reason, reason.count)
        }
        guard length >= 0, let response else {
            throw Failure(description: String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        defer { free(response) }
        return Array(UnsafeBufferPointer(start: response, count: length))
    }
}

/// A new P-256 key and a certificate signing request (PKCS #10, DER) for DNS names: the first is
/// the subject's common name, all are in subjectAltName.
public struct CertificateSigningRequest: Sendable {
    public let der: [UInt8]
    /// The new key, PKCS #8 PEM: it never leaves the process but sealed in the store.
    public let keyPEM: [UInt8]

    public init?(names: [String]) {
        guard !names.isEmpty else { return nil }
        var cNames = names.map { strdup($0) }
        defer { cNames.forEach { free($0) } }
        var csr: UnsafeMutablePointer<UInt8>?, key: UnsafeMutablePointer<UInt8>?
        var csrLength = 0, keyLength = 0
        let rc = cNames.withUnsafeMutableBufferPointer { pointers in
            pointers.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: pointers.count) {
                gatehouse_acme_certificate_request($0, Int32(names.count), &csr, &csrLength, &key, &keyLength)
            }
        }
        guard rc == 0, let csr, let key else { return nil }
        defer { free(csr); free(key) }
        der = Array(UnsafeBufferPointer(start: csr, count: csrLength))
        keyPEM = Array(UnsafeBufferPointer(start: key, count: keyLength))
    }
}
