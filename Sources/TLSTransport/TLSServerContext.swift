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

    public init(certificatePEM: [UInt8], keyPEM: [UInt8], ticketMaterial: [UInt8]) throws(TLSServerContextError) {
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
    }

    deinit { gatehouse_tls_server_context_free(pointer) }

    /// The TLS layer for an accepted non-blocking socket, in accept state (nil when OpenSSL cannot
    /// make one: out of memory).
    public func accept(_ fd: Int32) -> TLSStream? {
        guard let ssl = gatehouse_tls_server_new(pointer, fd) else { return nil }
        return TLSStream(ssl: ssl)
    }
}
