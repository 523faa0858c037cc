import GatehouseEncoding
import HTTP1

/// What an ingress asks `GET /auth` about (SPEC "Behind the ingress you already run"): the request
/// it is about to forward, as its forward-auth subrequest describes it.
///
/// nginx's `auth_request` names it with `X-Original-Method`/`X-Original-URI` (set in its
/// configuration); Traefik's `forwardAuth` and Caddy's `forward_auth` with
/// `X-Forwarded-Method`/`X-Forwarded-Uri`. The subrequest carries the browser's own fields
/// (`Cookie`, `Accept`, `Sec-Fetch-Mode`, the anti-forgery header) as they came.
public struct ForwardAuthRequest: Sendable, Equatable {
    public enum Ingress: Sendable, Equatable {
        /// `X-Original-URI`: nginx, whose `auth_request` takes only `2xx`, `401` and `403`.
        case nginx
        /// `X-Forwarded-Uri`: Traefik and Caddy, which pass any other answer to the browser.
        case forwarding
        /// Neither: a client asking for itself (the request's own method, no page to return to).
        case direct
    }

    public let ingress: Ingress
    /// The original request's method, upper-case as sent.
    public let method: String
    /// The original request's path and query, as the browser sent them; nil when not named.
    public let uri: String?
    /// A top-level navigation: `GET` with `Sec-Fetch-Mode: navigate`, or an `Accept` naming `text/html`.
    public let isNavigation: Bool

    public init(headers: HTTPHeaders, requestMethod: String) {
        let original = Self.single(headers, "X-Original-URI")
        let forwarded = Self.single(headers, "X-Forwarded-Uri")
        if let original {
            ingress = .nginx
            uri = original
            method = Self.single(headers, "X-Original-Method") ?? Self.single(headers, "X-Forwarded-Method") ?? requestMethod
        } else if let forwarded {
            ingress = .forwarding
            uri = forwarded
            method = Self.single(headers, "X-Forwarded-Method") ?? Self.single(headers, "X-Original-Method") ?? requestMethod
        } else {
            ingress = .direct
            uri = nil
            method = Self.single(headers, "X-Forwarded-Method") ?? Self.single(headers, "X-Original-Method") ?? requestMethod
        }
        let navigate = headers.values("Sec-Fetch-Mode").contains { $0.trimmingASCIIWhitespace().asciiCaseInsensitiveEquals("navigate") }
        let html = headers.values("Accept").contains { $0.lowercased().contains("text/html") }
        isNavigation = method == "GET" && (navigate || html)
    }

    /// Whether the original method changes nothing (RFC 9110 §9.2.1): others need the anti-forgery
    /// header, as a route's calls do.
    public var isSafeMethod: Bool { method == "GET" || method == "HEAD" || method == "OPTIONS" }

    /// Whether a signed-out answer is a redirect to the login: for a navigation, except through
    /// nginx (its `error_page 401` does the redirect) or when no page to return to was named.
    public var redirectsToLogin: Bool { isNavigation && ingress == .forwarding }

    /// `/login`, with the original URI as `returnTo` when it is one `/login` accepts.
    public func loginLocation(publicOrigin: String) -> String {
        guard let uri, ReturnTo.validate(uri) != nil, uri != "/" else { return publicOrigin + "/login" }
        return publicOrigin + "/login?returnTo=" + PercentEncoding.encodeQueryComponent(uri)
    }

    /// The one value of a field, trimmed; nil when absent, repeated, empty or not visible ASCII
    /// (an ingress sends each once; two are a forgery or a misconfiguration, never guessed at).
    private static func single(_ headers: HTTPHeaders, _ name: String) -> String? {
        let values = headers.values(name)
        guard values.count == 1 else { return nil }
        let value = values[0].trimmingASCIIWhitespace()
        guard !value.isEmpty, value.utf8.count <= 8_192, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        return String(value)
    }
}

/// The policy of one `/auth` query (`allow=`, `identity=`, `audience=`, `token=`): a route policy,
/// so that `/auth` is decided by the same function as the routes' calls (`RouteDecision`).
public enum ForwardAuthPolicy {
    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case unknownOption(String)
        case invalidValue(String)
        case repeated(String)
        case route(String)

        public var description: String {
            switch self {
            case .unknownOption(let name): "unknown option \(name) (known: allow, identity, audience, token)"
            case .invalidValue(let name): "option \(name) has a value /auth cannot use"
            case .repeated(let name): "option \(name) is given more than once"
            case .route(let why): why
            }
        }
    }

    /// The route policy for `query` (the `/auth` request's query, still percent-encoded): a signed-in
    /// user's session required, the identity headers always, the assertion with
    /// `identity=assertion|both`, the access token with `token=access` (never a DPoP-bound one: the
    /// ingress cannot prove possession of its key).
    public static func route(query: Substring?) throws(ParseError) -> UpstreamRoute {
        var values: [String: String] = [:]
        var rules: [String] = []
        for pair in (query ?? "").split(separator: "&") where !pair.isEmpty {
            let (rawName, rawValue) = pair.firstIndex(of: "=").map { (pair[..<$0], pair[pair.index(after: $0)...]) } ?? (pair, "")
            // `+` stays `+`: it joins an `allow=` rule's terms (an ingress writes the query by hand).
            guard let name = PercentEncoding.decodeString(rawName), let value = PercentEncoding.decodeString(rawValue) else {
                throw .invalidValue(String(rawName))
            }
            guard ["allow", "identity", "audience", "token"].contains(name) else { throw .unknownOption(name) }
            // `;` and `,` separate route options and routes: never part of one value.
            guard !value.isEmpty, !value.contains(";"), !value.contains(","),
                  value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .invalidValue(name) }
            // `allow=` repeated: alternatives, any one of which admits (as on a route).
            if name == "allow" {
                rules.append(value)
                continue
            }
            guard values[name] == nil else { throw .repeated(name) }
            values[name] = value
        }
        var options = ["auth=user"]
        switch values["identity"] ?? "headers" {
        case "headers": options.append("identity=headers")
        case "assertion", "both": options.append("identity=both")
        default: throw .invalidValue("identity")
        }
        switch values["token"] ?? "none" {
        case "none": options.append("token=none")
        case "access": options += ["token=access", "dpop=off"]
        default: throw .invalidValue("token")
        }
        if let audience = values["audience"] { options.append("audience=" + audience) }
        options += rules.map { "allow=" + $0 }
        // The prefix names the policy exactly: what is issued for a route (the assertion, its
        // audience) is remembered per session and prefix (`IdentityIssuer`).
        let text = options.joined(separator: ";")
        do {
            return try UpstreamRoute(prefix: "/forward-auth/" + Hex.encode(Array(text.utf8)), upstream: "http://127.0.0.1;" + text)
        } catch {
            if case .invalidOptions(_, let problem) = error { throw .route(problem.description) }
            throw .route(error.description)
        }
    }
}
