#if canImport(Glibc)
import Glibc
#endif
import EventLoops
import GatehouseCore
import GatehouseEncoding
import GatehouseSessions
import GatehouseTime
import Logging
import Synchronization
import HTTPClient
import TLSTransport

/// Keeps the HTTPS listener's certificate from an ACME CA, on a thread of its own: at start it
/// serves what the store holds; when there is none, or it is two thirds through its lifetime, the
/// instance that takes the store's lease orders one (http-01 through the redirect listener) and
/// stores it, and every instance installs what the store holds. A failure is retried with back-off
/// and never drops the certificate being served.
final class ACMECertificates: Sendable {
    let settings: ACMESettings
    private let store: any CertificateRecordStore
    private let certificate: ServerCertificate
    private let challenges: ACMEChallengeAnswers
    private let clock: any GatewayClock
    private let logger: Logger
    private let exchange: ACMEExchange
    private let owner = "acme-" + RandomToken.make(bytes: 16)
    private let recordName: String
    private let wake = ThreadCondition()
    private let stopped = Atomic<Bool>(false)
    /// The chain now installed (so an unchanged record is not installed again).
    private let installed = Mutex<[UInt8]?>(nil)

    /// How long the ordering instance holds the lease (renewed with each order).
    static let leaseSeconds: Int64 = 600
    /// How often the store is looked at for a certificate another instance obtained.
    static let lookSeconds: Int64 = 60

    /// http-01 when a redirect listener answers it, else tls-alpn-01 on the HTTPS port.
    private let provesOverHTTP: Bool

    init(settings: ACMESettings, store: any CertificateRecordStore, certificate: ServerCertificate,
         challenges: ACMEChallengeAnswers, provesOverHTTP: Bool, clock: any GatewayClock, logger: Logger,
         exchange: ACMEExchange? = nil) {
        self.provesOverHTTP = provesOverHTTP
        self.settings = settings
        self.store = store
        self.certificate = certificate
        self.challenges = challenges
        self.clock = clock
        self.logger = logger
        self.exchange = exchange ?? ACMEHTTP.exchange(bundle: settings.caBundle ?? TLSClientContext.bundlePath)
        recordName = ACMEState.recordName(settings)
    }

    func start() {
        DetachedThread.start(name: "gatehouse-acme") { [self] in run() }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        wake.lock()
        wake.signal()
        wake.unlock()
    }

    private func run() {
        var failures = 0
        while !stopped.load(ordering: .relaxed) {
            var wait: Int64
            do {
                wait = try step()
                failures = 0
            } catch {
                failures += 1
                wait = ACMEState.backoff(failures: failures)
                logger.error("ACME certificate order failed; the current certificate (if any) stays", metadata: [
                    "acme.domains": "\(settings.domains.joined(separator: ","))", "error": "\(error)",
                    "retry_in_s": "\(wait)",
                ])
            }
            sleep(seconds: wait)
        }
    }

    private func sleep(seconds: Int64) {
        let deadline = EventLoop.monotonicNow() &+ UInt64(max(1, seconds)) * 1_000_000_000
        wake.lock()
        while !stopped.load(ordering: .relaxed), EventLoop.monotonicNow() < deadline {
            wake.wait(untilMonotonic: deadline)
        }
        wake.unlock()
    }

    /// One look: installs what the store holds, orders when due and the lease is this instance's.
    /// Returns the seconds until the next look.
    func step() throws -> Int64 {
        var state = try load()
        install(state)
        let now = clock.unixSeconds()
        if let state, !state.needsOrder(now: now) { return nextLook(state) }
        guard try store.acquireCertificateLease(name: recordName, owner: owner, now: now, duration: Self.leaseSeconds) else {
            // Another instance is ordering: look for its result soon.
            return 5
        }
        defer { try? store.releaseCertificateLease(name: recordName, owner: owner) }
        // What the lease's previous holder stored meanwhile.
        state = try load()
        install(state)
        if let state, !state.needsOrder(now: clock.unixSeconds()) { return nextLook(state) }
        let ordered = try order(state ?? ACMEState(accountKey: ACMEAccountKey().raw))
        install(ordered)
        return nextLook(ordered)
    }

    /// At the renewal time, or in `lookSeconds` if that is sooner (another instance may renew first).
    private func nextLook(_ state: ACMEState) -> Int64 {
        let now = clock.unixSeconds()
        return max(1, min(Self.lookSeconds, (state.renewalTime ?? now) - now))
    }

    private func order(_ previous: ACMEState) throws -> ACMEState {
        var state = previous
        let key = ACMEAccountKey(raw: state.accountKey) ?? ACMEAccountKey()
        state.accountKey = key.raw
        let certificate = self.certificate
        let challenge: ACMEClient.Challenge = provesOverHTTP ? .http01 : .tlsALPN01(
            publish: { name, digest in try certificate.publishALPNChallenge(name: name, keyAuthorizationDigest: digest) },
            withdraw: { certificate.withdrawALPNChallenge(name: $0) })
        let client = ACMEClient(directoryURL: settings.directory, key: key, accountURL: state.accountURL,
                                exchange: exchange, challenge: challenge, pause: { Self.pause($0) })
        if state.accountURL == nil {
            state.accountURL = try client.ensureAccount(email: settings.email)
            try save(state)
        }
        logger.info("ordering a TLS certificate by ACME", metadata: ["acme.domains": "\(settings.domains.joined(separator: ","))"])
        challenges.thumbprint = key.thumbprint
        let issued = try client.order(domains: settings.domains)
        let notAfter = try TLSServerContext(certificatePEM: issued.chainPEM, keyPEM: issued.keyPEM,
                                            ticketMaterial: [UInt8](repeating: 0, count: TLSServerContext.ticketMaterialCount)).notAfter
        state.chainPEM = issued.chainPEM
        state.keyPEM = issued.keyPEM
        state.issuedAt = clock.unixSeconds()
        state.notAfter = notAfter
        try save(state)
        logger.info("TLS certificate obtained by ACME", metadata: [
            "acme.domains": "\(settings.domains.joined(separator: ","))", "tls.not_after": "\(notAfter)",
        ])
        return state
    }

    private func load() throws -> ACMEState? {
        let state = try Self.load(recordName, from: store)
        if let state, let key = ACMEAccountKey(raw: state.accountKey) { challenges.thumbprint = key.thumbprint }
        return state
    }

    static func load(_ name: String, from store: any CertificateRecordStore) throws -> ACMEState? {
        guard let record = try store.loadCertificateRecord(name: name) else { return nil }
        guard let state = ACMEState(decoding: record.payload) else {
            throw ACMEError.protocolError("the stored ACME state cannot be read")
        }
        return state
    }

    /// The account thumbprint the store holds for `settings` (for an instance not ordering).
    static func storedThumbprint(_ settings: ACMESettings, store: any CertificateRecordStore) -> String? {
        guard let state = try? load(ACMEState.recordName(settings), from: store) else { return nil }
        return ACMEAccountKey(raw: state.accountKey)?.thumbprint
    }

    private func save(_ state: ACMEState) throws {
        let record = CertificateRecord(name: recordName, payload: state.encoded, notAfter: state.notAfter,
                                       updatedAt: clock.unixSeconds())
        guard try store.saveCertificateRecord(record, owner: owner) else {
            throw ACMEError.invalid("the store's lease on the ACME state was lost while ordering")
        }
    }

    /// Serves the stored chain unless it is already served.
    private func install(_ state: ACMEState?) {
        guard let state, let chain = state.chainPEM, let key = state.keyPEM,
              installed.withLock({ $0 }) != chain else { return }
        do {
            try certificate.install(certificatePEM: chain, keyPEM: key)
            installed.withLock { $0 = chain }
        } catch {
            logger.error("the stored ACME certificate cannot serve", metadata: ["error": "\(error)"])
        }
    }

    private static func pause(_ seconds: Double) {
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
