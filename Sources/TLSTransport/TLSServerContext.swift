import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// Why a certificate and key cannot serve: each case names the file at fault, so start-up can
/// refuse with the variable that set it.
public enum TLSServerContextError: Error, Equatable, CustomStringConvertible {
    /// The certificate file cannot be read or holds no PEM certificate.
    case certificate(String)
    /// The key file cannot be read or holds no unencrypted PEM private key.
    case key(String)
    /// The key is not the certificate's.
    case mismatch
    case other(String)

    public var description: String {
        switch self {
        case .certificate(let why): return "the certificate: \(why)"
        case .key(let why): return "the private key: \(why)"
        case .mismatch: return "the private key does not belong to the certificate"
        case .other(let why): return why
        }
    }
}

/// One OpenSSL server context: a certificate chain and its key, the listener's protocol policy
/// (TLS 1.2 and 1.3, Mozilla's "intermediate" ciphers, no renegotiation, ALPN http/1.1), and the
/// session-ticket keys of one rotation period. Immutable once made: a new certificate or a new
/// period is a new context, and connections keep the one they were accepted with (OpenSSL counts
/// its references).
public final class TLSServerContext: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The leaf certificate's `notAfter`, in Unix seconds.
    public let notAfter: Int64

    /// Bytes of ticket-key material `init` takes: the current period's key then the previous one's,
    /// each a 16-byte name, a 32-byte AES key and a 32-byte HMAC key.
    public static let ticketMaterialCount = 160

    /// tls-alpn-01 challenge contexts this one hands validators to (kept alive with it).
    private let challengeContexts: [TLSServerContext]

    public init(certificatePEM: [UInt8], keyPEM: [UInt8], ticketMaterial: [UInt8],
                challenges: [(name: String, context: TLSServerContext)] = []) throws(TLSServerContextError) {
        guard ticketMaterial.count == Self.ticketMaterialCount else { throw .other("TLS: ticket keys of the wrong size") }
        var failure: Int32 = 0
        var reason = [CChar](repeating: 0, count: 256)
        let made = certificatePEM.withUnsafeBytes { cert in
            keyPEM.withUnsafeBytes { key in
                ticketMaterial.withUnsafeBytes { tickets in
                    gatehouse_tls_server_context(cert.baseAddress?.assumingMemoryBound(to: CChar.self), cert.count,
                                                 key.baseAddress?.assumingMemoryBound(to: CChar.self), key.count,
                                                 tickets.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                                 &failure, &reason, reason.count)
                }
            }
        }
        guard let made else {
            let why = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            switch UInt32(failure) {
            case GATEHOUSE_TLS_SERVER_CERTIFICATE.rawValue: throw .certificate(why)
            case GATEHOUSE_TLS_SERVER_KEY.rawValue: throw .key(why)
            case GATEHOUSE_TLS_SERVER_MISMATCH.rawValue: throw .mismatch
            default: throw .other(why)
            }
        }
        pointer = made
        notAfter = Int64(gatehouse_tls_server_not_after(made))
        challengeContexts = challenges.map(\.context)
        for challenge in challenges where gatehouse_tls_server_add_challenge(made, challenge.name, challenge.context.pointer) != 1 {
            throw .other("TLS: too many tls-alpn-01 challenges at once")
        }
    }

    /// A self-signed P-256 certificate and key (PEM) for `name`, valid for a day: the ACME
    /// placeholder, or with `acmeDigest` a tls-alpn-01 challenge certificate (RFC 8737 §3).
    public static func selfSigned(name: String, acmeDigest: [UInt8]?) -> ([UInt8], [UInt8])? {
        var cert: UnsafeMutablePointer<UInt8>?, key: UnsafeMutablePointer<UInt8>?
        var certLength = 0, keyLength = 0
        let rc = acmeDigest.map { digest in
            digest.withUnsafeBufferPointer { gatehouse_tls_self_signed(name, $0.baseAddress, &cert, &certLength, &key, &keyLength) }
        } ?? gatehouse_tls_self_signed(name, nil, &cert, &certLength, &key, &keyLength)
        guard rc == 0, let cert, let key else { return nil }
        defer { free(cert); free(key) }
        return (Array(UnsafeBufferPointer(start: cert, count: certLength)), Array(UnsafeBufferPointer(start: key, count: keyLength)))
    }

    deinit { gatehouse_tls_server_context_free(pointer) }

    /// The TLS layer for an accepted non-blocking socket, in accept state (nil when OpenSSL cannot
    /// make one: out of memory).
    public func accept(_ fd: Int32) -> TLSStream? {
        guard let ssl = gatehouse_tls_server_new(pointer, fd) else { return nil }
        return TLSStream(ssl: ssl)
    }
}
