/// One `PREFIX=UPSTREAM_URL` pair of `GATEHOUSE_ROUTES`.
///
/// A request whose path is under `prefix` (whole segments) is forwarded to `upstream`. When the
/// upstream URL has a path, that path replaces the prefix (`/api=http://up/v1`: `/api/x` → `/v1/x`);
/// otherwise the request path is kept (`/api=http://up`: `/api/x` → `/api/x`).
public struct UpstreamRoute: Sendable, Equatable, CustomStringConvertible {
    /// Starts with `/`, never ends with `/`, never `/` alone: `/api`, `/v2/orders`.
    public var prefix: String {
        get { storage.prefix }
        set { mutableStorage().prefix = newValue }
    }
    /// The upstream as configured (scheme, host, port, optional path; no query/fragment/userinfo).
    public var upstream: AbsoluteURL {
        get { storage.upstream }
        set { mutableStorage().upstream = newValue }
    }
    /// The path that replaces the prefix, without its trailing slash (`/v1`, or `""` for an
    /// upstream written as `http://up/`); nil when the upstream URL has no path (keep the path).
    public var replacementPath: String? {
        get { storage.replacementPath }
        set { mutableStorage().replacementPath = newValue }
    }
    /// The route's token policy (`;auth=…` options after the upstream URL; `.user` by default):
    /// whether a session is needed and which bearer, if any, the upstream receives. Every way into
    /// the upstream (API calls, WebSocket upgrades) asks `RouteCredentials` with this value.
    public var auth: RouteAuth {
        get { storage.auth }
        set { mutableStorage().auth = newValue }
    }
    /// `max_in_flight=N`: this route's bound of calls in flight per event loop (nil: the
    /// configuration's `GATEHOUSE_ROUTE_MAX_IN_FLIGHT`).
    public var maxInFlight: Int? { storage.maxInFlight }
    /// `providers=A|B`: only sessions of these providers may use the route; nil for every provider.
    public var providers: [String]? { storage.providers }
    /// `identity=`, `token=`, `exchange=` (with `audience=`, `resource=`, `scope=` on user routes):
    /// what the upstream is told about the user beyond the `auth=` policy's bearer.
    public var identity: RouteIdentity { storage.identity }
    /// `acr=`, `max_age=`: what the session's authentication must satisfy; nil for anything.
    public var stepUp: StepUpPolicy? { storage.stepUp }
    /// `allow=`: whose sessions may call the route; nil for every signed-in user.
    public var allow: AccessRule? { storage.allow }
    /// Whether the route decides from the session itself (its claims, its provider), not only its
    /// bearer: such routes take the shared session entry instead of the loop's bearer copy.
    public var readsSession: Bool { !storage.identity.isPlain || storage.stepUp != nil || storage.allow != nil }
    /// The calls in flight on this copy of the route: each event loop's copy (`loopCopy`) has its
    /// own, so the count stays on that loop's core.
    public var inFlight: InFlightCount { storage.inFlight }

    /// The fields, shared between copies until one is changed (copy on write). A route is copied
    /// several times per proxied request (the match, the router's decision, the forward target):
    /// as one reference that is a retain, where the dozen strings of the fields cost a memmove and
    /// a retain (and later a release) each.
    private var storage: Storage

    private final class Storage: @unchecked Sendable {
        // Mutated only through `mutableStorage()`, i.e. while uniquely referenced.
        var prefix: String
        var upstream: AbsoluteURL { didSet { origin = Self.origin(of: upstream) } }
        /// `scheme://authority`, made once (a span's `url.full` starts with it).
        private(set) var origin: String
        var replacementPath: String?
        var auth: RouteAuth
        var maxInFlight: Int?
        var providers: [String]?
        var identity: RouteIdentity
        var stepUp: StepUpPolicy?
        var allow: AccessRule?
        /// Not configuration: a new storage (another copy of the route) counts from zero.
        let inFlight = InFlightCount()

        init(prefix: String, upstream: AbsoluteURL, replacementPath: String?, auth: RouteAuth, maxInFlight: Int?,
             providers: [String]?, identity: RouteIdentity, stepUp: StepUpPolicy?, allow: AccessRule?) {
            (self.prefix, self.upstream, self.replacementPath) = (prefix, upstream, replacementPath)
            origin = Self.origin(of: upstream)
            (self.auth, self.maxInFlight, self.providers, self.identity) = (auth, maxInFlight, providers, identity)
            (self.stepUp, self.allow) = (stepUp, allow)
        }

        static func origin(of upstream: AbsoluteURL) -> String { upstream.scheme + "://" + upstream.authority }
    }

    private mutating func mutableStorage() -> Storage {
        if !isKnownUniquelyReferenced(&storage) {
            storage = Storage(prefix: storage.prefix, upstream: storage.upstream,
                              replacementPath: storage.replacementPath, auth: storage.auth, maxInFlight: storage.maxInFlight,
                              providers: storage.providers, identity: storage.identity, stepUp: storage.stepUp,
                              allow: storage.allow)
        }
        return storage
    }

    public static func == (a: UpstreamRoute, b: UpstreamRoute) -> Bool {
        a.storage === b.storage || (a.prefix == b.prefix && a.upstream == b.upstream
                                    && a.replacementPath == b.replacementPath && a.auth == b.auth
                                    && a.maxInFlight == b.maxInFlight && a.providers == b.providers
                                    && a.identity == b.identity && a.stepUp == b.stepUp && a.allow == b.allow)
    }

    public var description: String {
        "\(prefix)=\(upstream)\(auth)" + (providers.map { ";providers=" + $0.joined(separator: "|") } ?? "") + "\(identity)" + (stepUp?.description ?? "")
            + (allow.map { ";allow=\($0)" } ?? "")
    }

    /// Scheme (`http`/`https`), host without brackets, port and `Host` header value to connect with.
    public var scheme: String { upstream.scheme }
    public var host: String { upstream.host }
    public var port: Int { upstream.port }
    public var hostHeader: String { upstream.authority }
    /// `scheme://authority` of the upstream, kept with the route.
    public var upstreamOrigin: String { storage.origin }
    public var usesTLS: Bool { upstream.isHTTPS }

    /// Why one route entry was refused; `description` is phrased for an operator.
    public enum ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        case missingEquals(String)
        case invalidPrefix(String, reason: String)
        case invalidUpstream(String, reason: String)
        /// The `;`-separated options after the upstream URL (`auth=`, `scope=`, …) of route `prefix`.
        case invalidOptions(prefix: String, RouteOptions.ParseError)

        public var description: String {
            switch self {
            case .missingEquals(let entry):
                "entry \(ConfigurationIssue.quote(entry)) is not PREFIX=UPSTREAM_URL"
            case .invalidPrefix(let prefix, let reason):
                "prefix \(ConfigurationIssue.quote(prefix)) \(reason)"
            case .invalidUpstream(let url, let reason):
                "upstream \(ConfigurationIssue.quote(url)) \(reason)"
            case .invalidOptions(let prefix, let error):
                "route \(ConfigurationIssue.quote(prefix)) \(error)"
            }
        }
    }

    /// Paths Gatehouse answers itself; a route must not shadow them.
    public static let reservedPaths = ["/login", "/callback", "/user", "/logout", "/backchannel-logout",
                                       "/healthz", "/readyz", "/metrics", "/providers", "/.well-known/jwks.json",
                                       "/sessions", "/auth", "/frontchannel-logout", "/request-object"]

    /// - Parameter rawUpstream: the upstream URL, optionally followed by `;`-separated route options
    ///   (`http://cms:9200;auth=none`); a `;` therefore always starts the options.
    public init(prefix rawPrefix: String, upstream rawUpstream: String) throws(ParseError) {
        var prefix = String(rawPrefix.trimmingConfigurationWhitespace())
        let semicolon = rawUpstream.firstIndex(of: ";")
        let upstreamText = String(rawUpstream[..<(semicolon ?? rawUpstream.endIndex)].trimmingConfigurationWhitespace())
        guard prefix.hasPrefix("/") else { throw .invalidPrefix(prefix, reason: "must start with /") }
        while prefix.count > 1, prefix.hasSuffix("/") { prefix.removeLast() }
        guard prefix != "/" else {
            throw .invalidPrefix(prefix, reason: "would capture every path (the SPA and Gatehouse's own endpoints)")
        }
        for segment in prefix.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            guard !segment.isEmpty else { throw .invalidPrefix(prefix, reason: "has an empty segment (//)") }
            guard segment != ".", segment != ".." else { throw .invalidPrefix(prefix, reason: "has a dot segment") }
            guard segment.utf8.allSatisfy(URLBytes.isPathChar) else {
                throw .invalidPrefix(prefix, reason: "may only use unreserved characters, sub-delims, : and @ (no %, ?, #, \\ or spaces)")
            }
        }
        for reserved in Self.reservedPaths where prefix == reserved || reserved.hasPrefix(prefix + "/") || prefix.hasPrefix(reserved + "/") {
            throw .invalidPrefix(prefix, reason: "collides with Gatehouse's own endpoint \(reserved)")
        }

        let url: AbsoluteURL
        do { url = try AbsoluteURL(parsing: upstreamText) } catch {
            throw .invalidUpstream(upstreamText, reason: error.description)
        }
        guard !url.hasUserInfo else { throw .invalidUpstream(upstreamText, reason: "must not contain user information (user@)") }
        guard url.query == nil else { throw .invalidUpstream(upstreamText, reason: "must not have a query") }
        guard url.fragment == nil else { throw .invalidUpstream(upstreamText, reason: "must not have a fragment") }
        var replacement: String?
        var options = RouteOptions.Parsed()
        if !url.path.isEmpty {
            var path = url.path
            while path.hasSuffix("/") { path.removeLast() }
            for segment in path.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
                guard !RouteTable.isDotSegment(segment) else {
                    throw .invalidUpstream(upstreamText, reason: "has a dot segment in its path")
                }
            }
            replacement = path
        }
        if let semicolon {
            do { options = try RouteOptions.parse(rawUpstream[rawUpstream.index(after: semicolon)...]) } catch {
                throw .invalidOptions(prefix: prefix, error)
            }
        }
        storage = Storage(prefix: prefix, upstream: url, replacementPath: replacement, auth: options.auth,
                          maxInFlight: options.maxInFlight, providers: options.providers, identity: options.identity,
                          stepUp: options.stepUp, allow: options.allow)
    }

    /// Parses the whole `GATEHOUSE_ROUTES` value: comma-separated entries, blanks ignored.
    /// Every problem is returned (a bad entry does not hide the next one), including duplicates.
    public static func parseList(_ text: String) -> (routes: [UpstreamRoute], errors: [ParseError]) {
        var routes: [UpstreamRoute] = []
        var errors: [ParseError] = []
        for rawEntry in text.split(separator: ",") {
            let entry = rawEntry.trimmingConfigurationWhitespace()
            if entry.isEmpty { continue }
            guard let eq = entry.firstIndex(of: "=") else {
                errors.append(.missingEquals(String(entry)))
                continue
            }
            do {
                let route = try UpstreamRoute(prefix: String(entry[..<eq]), upstream: String(entry[entry.index(after: eq)...]))
                if routes.contains(where: { $0.prefix == route.prefix }) {
                    errors.append(.invalidPrefix(route.prefix, reason: "is listed more than once"))
                } else {
                    routes.append(route)
                }
            } catch {
                errors.append(error)
            }
        }
        return (routes, errors)
    }
}
