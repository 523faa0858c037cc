import EventLoops
import Synchronization

/// Which part of the gateway a request went to, for metrics labels.
public enum RouteClass: Int, CaseIterable, Sendable {
    case login, callback, user, logout, api, `static`, ops
    /// `/auth`: an ingress's forward-auth question (last: the raw values index the counters).
    case auth

    public var label: String {
        switch self {
        case .login: "login"
        case .callback: "callback"
        case .user: "user"
        case .logout: "logout"
        case .api: "api"
        case .static: "static"
        case .ops: "ops"
        case .auth: "auth"
        }
    }
}

/// Counters and histograms exposed at `/metrics` in the Prometheus text format (version 0.0.4).
///
/// One mutex guards plain integers: an uncontended lock per request costs tens of nanoseconds, and
/// scraping copies the numbers out under the same lock, so a scrape never slows requests down.
public final class GatewayMetrics: Sendable {
    static let bucketBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// Per-request counters, kept in one shard per event loop: each loop thread then locks its own
    /// mutex, and the counters' cache lines do not bounce between cores on every request.
    struct RequestNumbers {
        var requests = [Int](repeating: 0, count: RouteClass.allCases.count * 5)
        var buckets = [Int](repeating: 0, count: RouteClass.allCases.count * (GatewayMetrics.bucketBounds.count + 1))
        var durationSum = [Double](repeating: 0, count: RouteClass.allCases.count)
        var durationCount = [Int](repeating: 0, count: RouteClass.allCases.count)

        mutating func add(_ other: RequestNumbers) {
            for i in requests.indices { requests[i] += other.requests[i] }
            for i in buckets.indices { buckets[i] += other.buckets[i] }
            for i in durationSum.indices { durationSum[i] += other.durationSum[i] }
            for i in durationCount.indices { durationCount[i] += other.durationCount[i] }
        }
    }

    private final class RequestShard: Sendable {
        let numbers = Mutex(RequestNumbers())
    }

    /// The tracer's count of spans not exported (0 without traces).
    private let droppedSpans = Mutex<(@Sendable () -> UInt64)?>(nil)

    /// `/metrics` reads the dropped-spans count from `read`.
    public func countDroppedSpans(_ read: @escaping @Sendable () -> UInt64) {
        droppedSpans.withLock { $0 = read }
    }

    /// The HTTPS listener's certificate expiry (Unix seconds; nil while no certificate is held),
    /// unset on a plain listener.
    private let certificateExpiryReader = Mutex<(@Sendable () -> Int64?)?>(nil)

    /// `/metrics` and `/readyz` read the served certificate's expiry from `read`.
    public func reportCertificateExpiry(_ read: @escaping @Sendable () -> Int64?) {
        certificateExpiryReader.withLock { $0 = read }
    }

    /// nil on a plain listener; `.some(nil)` while the HTTPS listener holds no certificate.
    var certificateExpiry: Int64?? {
        guard let read = certificateExpiryReader.withLock({ $0 }) else { return nil }
        return .some(read())
    }

    private static let shardCount = 16
    private let shards: [RequestShard] = (0..<GatewayMetrics.shardCount).map { _ in RequestShard() }

    /// Login and refresh counts by provider label (`""` with one provider: no `provider` label)
    /// and, for failures, reason.
    struct Numbers {
        var loginsStarted: [String: Int] = [:]
        var loginsCompleted: [String: Int] = [:]
        var loginsFailed: [ProviderReason: Int] = [:]
        var refreshesOK: [String: Int] = [:]
        var refreshesFailed: [ProviderReason: Int] = [:]
        var upstreamErrors: [String: Int] = [:]
        var openConnections = 0
        var rejectedConnections = 0
        /// Configuration reloads (`GATEHOUSE_CONFIG`), by result; both shown from the start.
        var configReloads: [String: Int] = ["ok": 0, "error": 0]
    }

    private let numbers = Mutex(Numbers())

    /// `gatehouse_active_sessions`, counted off the event loops (the runtime starts its thread).
    public let activeSessions = ActiveSessionsGauge()

    public init() {}

    public func recordRequest(_ routeClass: RouteClass, status: Int, durationNanoseconds: UInt64) {
        let statusClass = min(max(status / 100, 1), 5) - 1
        let seconds = Double(durationNanoseconds) / 1e9
        var bucket = GatewayMetrics.bucketBounds.count
        for (i, bound) in GatewayMetrics.bucketBounds.enumerated() where seconds <= bound {
            bucket = i
            break
        }
        let c = routeClass.rawValue
        let shard = shards[(EventLoop.withCurrent { $0.index } ?? 0) % GatewayMetrics.shardCount]
        shard.numbers.withLock { n in
            n.requests[c * 5 + statusClass] += 1
            n.buckets[c * (GatewayMetrics.bucketBounds.count + 1) + bucket] += 1
            n.durationSum[c] += seconds
            n.durationCount[c] += 1
        }
    }

    struct ProviderReason: Hashable, Comparable {
        let provider: String
        let reason: String

        static func < (a: ProviderReason, b: ProviderReason) -> Bool { (a.provider, a.reason) < (b.provider, b.reason) }
    }

    // `provider`: the provider's name with several providers (`GATEHOUSE_PROVIDERS`), nil with one
    // (the metrics then carry no provider label, as before there were several).
    public func loginStarted(provider: String? = nil) { numbers.withLock { $0.loginsStarted[provider ?? "", default: 0] += 1 } }
    public func loginCompleted(provider: String? = nil) {
        numbers.withLock { $0.loginsCompleted[provider ?? "", default: 0] += 1 }
        activeSessions.nudge()
    }
    public func loginFailed(reason: String, provider: String? = nil) {
        numbers.withLock { $0.loginsFailed[ProviderReason(provider: provider ?? "", reason: reason), default: 0] += 1 }
    }
    public func refreshSucceeded(provider: String? = nil) { numbers.withLock { $0.refreshesOK[provider ?? "", default: 0] += 1 } }
    public func refreshFailed(reason: String, provider: String? = nil) {
        numbers.withLock { $0.refreshesFailed[ProviderReason(provider: provider ?? "", reason: reason), default: 0] += 1 }
    }
    public func upstreamError(kind: String) { numbers.withLock { $0.upstreamErrors[kind, default: 0] += 1 } }
    public func connectionOpened() { numbers.withLock { $0.openConnections += 1 } }
    public func connectionClosed() { numbers.withLock { $0.openConnections -= 1 } }
    public func connectionRejected() { numbers.withLock { $0.rejectedConnections += 1 } }
    /// A configuration reload: `ok` (switched) or `error` (the old configuration kept).
    public func configReloaded(ok: Bool) { numbers.withLock { $0.configReloads[ok ? "ok" : "error", default: 0] += 1 } }

    /// The exposition text. Reads only memory: the session gauge is the last background count.
    public func render() -> String {
        let activeSessions = self.activeSessions.value
        let n = numbers.withLock { $0 }
        var r = RequestNumbers()
        for shard in shards { r.add(shard.numbers.withLock { $0 }) }
        var out = ""
        out += "# HELP gatehouse_http_requests_total HTTP requests answered, by route class and status class.\n"
        out += "# TYPE gatehouse_http_requests_total counter\n"
        let statusLabels = ["1xx", "2xx", "3xx", "4xx", "5xx"]
        for route in RouteClass.allCases {
            for (s, label) in statusLabels.enumerated() {
                out += "gatehouse_http_requests_total{route=\"\(route.label)\",status=\"\(label)\"} \(r.requests[route.rawValue * 5 + s])\n"
            }
        }
        out += "# HELP gatehouse_http_request_duration_seconds Time from request head to the end of the response.\n"
        out += "# TYPE gatehouse_http_request_duration_seconds histogram\n"
        let width = GatewayMetrics.bucketBounds.count + 1
        for route in RouteClass.allCases {
            var cumulative = 0
            for (i, bound) in GatewayMetrics.bucketBounds.enumerated() {
                cumulative += r.buckets[route.rawValue * width + i]
                out += "gatehouse_http_request_duration_seconds_bucket{route=\"\(route.label)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            cumulative += r.buckets[route.rawValue * width + width - 1]
            out += "gatehouse_http_request_duration_seconds_bucket{route=\"\(route.label)\",le=\"+Inf\"} \(cumulative)\n"
            out += "gatehouse_http_request_duration_seconds_sum{route=\"\(route.label)\"} \(r.durationSum[route.rawValue])\n"
            out += "gatehouse_http_request_duration_seconds_count{route=\"\(route.label)\"} \(r.durationCount[route.rawValue])\n"
        }
        if let activeSessions {
            metric(&out, "gatehouse_active_sessions", "gauge", "Sessions that have not expired.", [("", activeSessions)])
        }
        metric(&out, "gatehouse_logins_started_total", "counter", "Logins started at /login.",
               byProvider(n.loginsStarted))
        metric(&out, "gatehouse_logins_completed_total", "counter", "Logins that created a session.",
               byProvider(n.loginsCompleted))
        metric(&out, "gatehouse_logins_failed_total", "counter", "Logins that failed at /callback, by reason.",
               n.loginsFailed.sorted { $0.key < $1.key }.map { (labels($0.key.provider, "reason=\"\($0.key.reason)\""), $0.value) })
        metric(&out, "gatehouse_token_refreshes_total", "counter", "Access-token refreshes, by result.",
               byProvider(n.refreshesOK, "result=\"ok\"")
                   + n.refreshesFailed.sorted { $0.key < $1.key }.map {
                       (labels($0.key.provider, "result=\"failed\",reason=\"\($0.key.reason)\""), $0.value)
                   })
        metric(&out, "gatehouse_upstream_errors_total", "counter", "Failed upstream exchanges, by kind.",
               labelled("kind", n.upstreamErrors))
        metric(&out, "gatehouse_config_reloads_total", "counter", "Configuration file reloads, by result.",
               labelled("result", n.configReloads))
        let dropped = droppedSpans.withLock { $0 }?() ?? 0
        metric(&out, "gatehouse_otel_spans_dropped_total", "counter",
               "Trace spans not exported: the queue was full, or the collector failed or was unreachable.",
               [("", Int(clamping: dropped))])
        if let expiry = certificateExpiry {
            metric(&out, "gatehouse_tls_certificate_expiry_timestamp_seconds", "gauge",
                   "When the served TLS certificate expires (Unix seconds); 0 while none is held.",
                   [("", Int(expiry ?? 0))])
        }
        metric(&out, "gatehouse_open_connections", "gauge", "Client connections currently open.",
               [("", n.openConnections)])
        metric(&out, "gatehouse_rejected_connections_total", "counter", "Connections closed at accept (connection limit).",
               [("", n.rejectedConnections)])
        return out
    }

    /// One metric family: HELP and TYPE lines, then one sample per (label set, value).
    private func metric(_ out: inout String, _ name: String, _ type: String, _ help: String, _ samples: [(String, Int)]) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        for (labels, value) in samples { out += "\(name)\(labels) \(value)\n" }
    }

    /// `{provider="NAME",extra}`, without the provider label for `""` (one provider).
    private func labels(_ provider: String, _ extra: String = "") -> String {
        let all = [provider.isEmpty ? "" : "provider=\"\(provider)\"", extra].filter { !$0.isEmpty }
        return all.isEmpty ? "" : "{" + all.joined(separator: ",") + "}"
    }

    /// One sample per provider seen (one unlabelled `0` before any was).
    private func byProvider(_ counts: [String: Int], _ extra: String = "") -> [(String, Int)] {
        guard !counts.isEmpty else { return [(labels("", extra), 0)] }
        return counts.sorted { $0.key < $1.key }.map { (labels($0.key, extra), $0.value) }
    }

    private func labelled(_ label: String, _ counts: [String: Int]) -> [(String, Int)] {
        counts.sorted { $0.key < $1.key }.map { ("{\(label)=\"\($0.key)\"}", $0.value) }
    }
}
