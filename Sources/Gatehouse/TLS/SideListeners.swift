import GatehouseCore
import GatehouseSessions
import HTTPServer
import TLSTransport

/// What runs beside the public listener: `/metrics` on a port of its own, the plain listener that
/// redirects to HTTPS and answers ACME challenges, and the watch on the certificate files.
struct SideListeners: Sendable {
    let metrics: HTTPServer?
    let redirect: HTTPServer?
    /// The http-01 challenges the redirect listener answers.
    let challenges: ACMEChallengeAnswers
    let certificateWatch: Task<Void, Never>?
    /// The ACME client keeping the certificate, when the certificate comes from ACME.
    let acme: ACMECertificates?

    /// Starts each configured listener; a port one cannot have stops the start (after closing the
    /// ones already open).
    static func start(_ configuration: GatehouseConfiguration, context: GatewayContext, certificate: ServerCertificate?,
                      store: any SessionStore) throws(GatewayStartError) -> SideListeners {
        var acmeStore: (any CertificateRecordStore)?
        if configuration.listenerTLS.acme != nil {
            guard let records = store as? any CertificateRecordStore else {
                throw .configuration("GATEHOUSE_ACME_DIRECTORY: this session store cannot keep certificates")
            }
            acmeStore = records
        }
        var metrics: HTTPServer?
        if let address = configuration.metricsListen {
            do { metrics = try MetricsListener.start(address, context: context) } catch {
                throw .bind("GATEHOUSE_METRICS_LISTEN \(address.host):\(address.port): \(error)")
            }
        }
        var lookUp: (@Sendable () async -> String?)?
        if let settings = configuration.listenerTLS.acme, let records = acmeStore {
            let executor = context.sessions.executor
            lookUp = { try? await executor.run { () throws(SessionStoreError) in ACMECertificates.storedThumbprint(settings, store: records) } }
        }
        let challenges = ACMEChallengeAnswers(lookUp: lookUp)
        var redirect: HTTPServer?
        if let address = configuration.listenerTLS.redirectListen {
            let handler = HTTPSRedirectListener(publicURL: configuration.publicURL,
                                                acmeDomains: configuration.listenerTLS.acme?.domains ?? [],
                                                challenges: challenges, secure: context.secure)
            do { redirect = try HTTPSRedirectListener.start(address, handler: handler, context: context) } catch {
                if let metrics { Task { await metrics.shutdown(graceNanoseconds: 0) } }
                throw .bind("GATEHOUSE_HTTP_REDIRECT_LISTEN \(address.host):\(address.port): \(error)")
            }
        }
        let watch = certificate.map { ListenerCertificate.watch($0, logger: context.logger) }
        var acme: ACMECertificates?
        if let settings = configuration.listenerTLS.acme, let acmeStore, let certificate {
            acme = ACMECertificates(settings: settings, store: acmeStore, certificate: certificate, challenges: challenges,
                                    provesOverHTTP: redirect != nil, clock: context.clock, logger: context.logger)
        }
        return SideListeners(metrics: metrics, redirect: redirect, challenges: challenges, certificateWatch: watch, acme: acme)
    }

    /// Stops them at once (a start that failed later).
    func stop() {
        certificateWatch?.cancel()
        acme?.stop()
        let (metrics, redirect) = (self.metrics, self.redirect)
        Task {
            await metrics?.shutdown(graceNanoseconds: 0)
            await redirect?.shutdown(graceNanoseconds: 0)
        }
    }

    func shutdown() async {
        certificateWatch?.cancel()
        acme?.stop()
        await metrics?.shutdown(graceNanoseconds: 0)
        await redirect?.shutdown(graceNanoseconds: 0)
    }
}
