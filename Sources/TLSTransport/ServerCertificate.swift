#if canImport(Glibc)
import Glibc
#endif
import COpenSSL
import Synchronization

/// The HTTPS listener's certificate as it is now: the context new connections are accepted with,
/// replaced whole when the certificate files change, when a certificate arrives from elsewhere
/// (ACME), or when the session-ticket period turns. Connections already open keep their context;
/// none is dropped by a change.
///
/// Session tickets are encrypted under keys derived per period (`ticketKeys(period)`, 80 bytes:
/// name, AES key, HMAC key) and the previous period's still decrypts, so a ticket lives one to two
/// periods; instances that derive from the same secret resume each other's sessions.
public final class ServerCertificate: Sendable {
    /// Seconds one ticket key encrypts new tickets for.
    public static let ticketPeriodSeconds: Int64 = 12 * 3600

    /// Where the PEM files are (nil: certificates are installed by `install`).
    public struct Files: Sendable, Equatable {
        public let certificate: String
        public let key: String
        public init(certificate: String, key: String) { (self.certificate, self.key) = (certificate, key) }
    }

    private struct Current {
        var context: TLSServerContext
        var certificatePEM: [UInt8]
        var keyPEM: [UInt8]
        var period: Int64
        var stamps: [FileStamp]
        var isPlaceholder = false
        /// tls-alpn-01 challenges being validated, by name.
        var challenges: [String: TLSServerContext] = [:]
    }

    public let files: Files?
    private let ticketKeys: @Sendable (Int64) -> [UInt8]
    private let wallClock: @Sendable () -> Int64
    private let current: Mutex<Current?>

    /// Reads the files now: start-up fails here on a missing file, a bad PEM or a key that is not
    /// the certificate's.
    public init(files: Files, ticketKeys: @escaping @Sendable (Int64) -> [UInt8],
                wallClock: @escaping @Sendable () -> Int64) throws(TLSServerContextError) {
        self.files = files
        self.ticketKeys = ticketKeys
        self.wallClock = wallClock
        let period = wallClock() / Self.ticketPeriodSeconds
        let (cert, key, stamps) = try Self.read(files)
        let context = try TLSServerContext(certificatePEM: cert, keyPEM: key,
                                           ticketMaterial: Self.material(ticketKeys, period))
        current = Mutex(Current(context: context, certificatePEM: cert, keyPEM: key, period: period, stamps: stamps))
    }

    /// A listener whose certificate comes later (`install`, from ACME): until then it presents a
    /// self-signed placeholder for `placeholderName`, so that probes still reach `/readyz` (which
    /// says no certificate is held) and no browser is ever given a certificate it trusts.
    public init(awaitingInstall ticketKeys: @escaping @Sendable (Int64) -> [UInt8], wallClock: @escaping @Sendable () -> Int64,
                placeholderName: String) {
        files = nil
        self.ticketKeys = ticketKeys
        self.wallClock = wallClock
        let period = wallClock() / Self.ticketPeriodSeconds
        let placeholder = Self.placeholder(placeholderName).flatMap { cert, key in
            (try? TLSServerContext(certificatePEM: cert, keyPEM: key, ticketMaterial: Self.material(ticketKeys, period)))
                .map { Current(context: $0, certificatePEM: cert, keyPEM: key, period: period, stamps: [], isPlaceholder: true) }
        }
        current = Mutex(placeholder)
    }

    /// The context for a connection accepted now (nil while no certificate is held).
    public var context: TLSServerContext? { current.withLock { $0?.context } }

    /// The served certificate's `notAfter` (Unix seconds), nil while none is held (a placeholder
    /// is not one).
    public var notAfter: Int64? { current.withLock { $0.flatMap { $0.isPlaceholder ? nil : $0.context.notAfter } } }

    private static func placeholder(_ name: String) -> ([UInt8], [UInt8])? {
        TLSServerContext.selfSigned(name: name, acmeDigest: nil)
    }

    /// What `refresh` did.
    public enum Refresh: Equatable, Sendable {
        case unchanged
        /// New files were read and are served from now on.
        case reloaded
        /// The ticket period turned: the same certificate with the next ticket key.
        case rotated
        /// The files changed but cannot serve; the previous certificate stays.
        case refused(TLSServerContextError)
    }

    /// Re-reads the files when they changed (size, time or inode; a renamed-in replacement counts)
    /// and turns the ticket period when it is due. Called every few seconds off the event loops.
    public func refresh() -> Refresh {
        let period = wallClock() / Self.ticketPeriodSeconds
        guard let held = current.withLock({ $0 }) else { return .unchanged }
        if let files, held.stamps != FileStamp.of([files.certificate, files.key]) {
            do {
                let (cert, key, stamps) = try Self.read(files)
                let context = try TLSServerContext(certificatePEM: cert, keyPEM: key,
                                                   ticketMaterial: Self.material(ticketKeys, period))
                current.withLock { $0 = Current(context: context, certificatePEM: cert, keyPEM: key, period: period, stamps: stamps) }
                return .reloaded
            } catch {
                // Not again until the files change once more.
                current.withLock { $0?.stamps = FileStamp.of([files.certificate, files.key]) }
                return .refused(error)
            }
        }
        guard period != held.period else { return .unchanged }
        do {
            try mutate { $0.period = period }
            return .rotated
        } catch {
            return .refused(error)
        }
    }

    /// Serves this certificate from now on (an ACME order's result).
    public func install(certificatePEM: [UInt8], keyPEM: [UInt8]) throws(TLSServerContextError) {
        let period = wallClock() / Self.ticketPeriodSeconds
        let context = try TLSServerContext(certificatePEM: certificatePEM, keyPEM: keyPEM,
                                           ticketMaterial: Self.material(ticketKeys, period))
        try current.withLock { (held: inout Current?) throws(TLSServerContextError) in
            guard var next = held else {
                held = Current(context: context, certificatePEM: certificatePEM, keyPEM: keyPEM, period: period, stamps: [])
                return
            }
            (next.certificatePEM, next.keyPEM, next.period, next.isPlaceholder) = (certificatePEM, keyPEM, period, false)
            next.context = next.challenges.isEmpty ? context : try rebuilt(next)
            held = next
        }
    }

    /// tls-alpn-01 (RFC 8737): validators connecting with ALPN `acme-tls/1` and `name` in SNI are shown
    /// a certificate for `name` carrying `keyAuthorizationDigest` (SHA-256 of the key authorization)
    /// until `withdrawALPNChallenge`; every other connection is served as before.
    public func publishALPNChallenge(name: String, keyAuthorizationDigest: [UInt8]) throws(TLSServerContextError) {
        guard keyAuthorizationDigest.count == 32,
              let (cert, key) = TLSServerContext.selfSigned(name: name, acmeDigest: keyAuthorizationDigest) else {
            throw .other("TLS: cannot make a tls-alpn-01 certificate for \(name)")
        }
        let challenge = try TLSServerContext(certificatePEM: cert, keyPEM: key,
                                             ticketMaterial: [UInt8](repeating: 0, count: TLSServerContext.ticketMaterialCount))
        try mutate { $0.challenges[name.lowercased()] = challenge }
    }

    public func withdrawALPNChallenge(name: String) {
        try? mutate { $0.challenges[name.lowercased()] = nil }
    }

    /// Changes what is held and makes its context anew, under the lock (rare: a period, a challenge).
    private func mutate(_ change: (inout Current) -> Void) throws(TLSServerContextError) {
        try current.withLock { (held: inout Current?) throws(TLSServerContextError) in
            guard var next = held else { throw .other("TLS: no certificate is held") }
            change(&next)
            next.context = try rebuilt(next)
            held = next
        }
    }

    private func rebuilt(_ held: Current) throws(TLSServerContextError) -> TLSServerContext {
        try TLSServerContext(certificatePEM: held.certificatePEM, keyPEM: held.keyPEM,
                             ticketMaterial: Self.material(ticketKeys, held.period),
                             challenges: held.challenges.map { ($0.key, $0.value) })
    }

    private static func material(_ keys: (Int64) -> [UInt8], _ period: Int64) -> [UInt8] {
        keys(period) + keys(period - 1)
    }

    private static func read(_ files: Files) throws(TLSServerContextError) -> ([UInt8], [UInt8], [FileStamp]) {
        let stamps = FileStamp.of([files.certificate, files.key])
        guard let cert = readFile(files.certificate) else { throw .certificate("\(files.certificate) cannot be read") }
        guard let key = readFile(files.key) else { throw .key("\(files.key) cannot be read") }
        return (cert, key, stamps)
    }

    /// A whole small file (a PEM chain or key, at most 1 MiB).
    static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { return bytes }
            bytes += chunk[0..<n]
            if bytes.count > 1 << 20 { return nil }
        }
    }
}

/// What tells a replaced file from the one read before: inode, size and modification time.
struct FileStamp: Equatable, Sendable {
    var inode: UInt64
    var size: Int64
    var modified: Int64
    var modifiedNanoseconds: Int64

    static func of(_ paths: [String]) -> [FileStamp] {
        paths.map { path in
            var info = stat()
            guard stat(path, &info) == 0 else { return FileStamp(inode: 0, size: -1, modified: 0, modifiedNanoseconds: 0) }
            return FileStamp(inode: UInt64(info.st_ino), size: Int64(info.st_size),
                             modified: Int64(info.st_mtim.tv_sec), modifiedNanoseconds: Int64(info.st_mtim.tv_nsec))
        }
    }
}
