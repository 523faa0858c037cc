import HTTP1
import HTTPServer

/// The gateway's own endpoints, declared once: each one's spelling, the methods it answers, whether
/// it needs the anti-forgery header, the class the metrics and the access log count it under, and
/// how it is answered. The recogniser (`OwnPath.init`), the router (`RequestRoute`), the method gate,
/// the access log and the dispatch (`Gateway`) read this table and nothing else.
///
/// Adding an endpoint: a case of `OwnPath` and its row in `table` (the order of `OwnPath`'s cases;
/// `OwnPathTests` checks it), nothing more.
struct OwnEndpoint: Sendable {
    let path: OwnPath
    /// The fixed path, or the prefix before the name of a `providerName`/`handle` path.
    let spelling: StaticString
    let shape: Shape
    /// The methods it answers (`Allow` of a `405`); nil for every method.
    let methods: [String]?
    /// Whether the anti-forgery header is required, by method.
    let antiForgery: AntiForgery
    let routeClass: RouteClass
    let answer: Answer

    enum Shape: Sendable {
        /// Exactly `spelling`.
        case fixed
        /// `spelling` and a provider's name of 1–32 characters; the gateway's only with
        /// `GATEHOUSE_PROVIDERS` (the SPA's otherwise, as those paths always were).
        case providerName
        /// `spelling` and a handle; the gateway's only when a provider passes request objects by
        /// reference. The handle lets anyone fetch what it names: logs and spans never show it.
        case handle
    }

    enum AntiForgery: Sendable {
        case never
        case always
        /// Every method but `GET` (`GET /logout` is the provider's front-channel logout).
        case unlessGET
    }

    /// How the gateway answers. `name` is what follows a `providerName` or `handle` path's prefix
    /// (nil for a fixed path).
    enum Answer: Sendable {
        /// From memory before the gate: every method, no session (`Gateway.answer`).
        case beforeGate
        /// Built and secured once when the gateway starts, then sent as is (past the gate, which
        /// refused other methods).
        case builtOnce(@Sendable (GatewayContext) -> HTTPResponse)
        /// `/auth`: decided on the loop with the request's fields (`ForwardAuthEndpoint`).
        case forwardAuth
        /// Made in a task and secured.
        case inTask(@Sendable (GatewayContext, HTTPRequest, _ name: String?) async -> HTTPResponse)
        /// Made in a task with the endpoint's own security fields (front-channel logout is framed
        /// by the provider: `frame-ancestors`, no `X-Frame-Options: DENY` from `SecuredAnswers`).
        case inTaskOwnFields(@Sendable (GatewayContext, HTTPRequest, _ name: String?) async -> HTTPResponse)
    }

    static func of(_ path: OwnPath) -> OwnEndpoint { table[Int(path.rawValue)] }

    /// What the recogniser and the router ask of a row on every request, as plain values: copying
    /// a row out of `table` retains its method list and handler and the table itself, and two
    /// event loops writing those shared reference counts on every request cost more than the
    /// question (`bench/shared_refs`). Made once from `table`, never freed.
    struct Facts {
        let path: OwnPath
        let spelling: StaticString
        let shape: Shape
        let routeClass: RouteClass
        let antiForgery: AntiForgery
        /// `methods == nil`.
        let everyMethod: Bool
    }

    /// Written once, when first read, and never again (hence `nonisolated(unsafe)`).
    nonisolated(unsafe) static let facts = frozen(table.map(\.facts))

    static func facts(of path: OwnPath) -> Facts { facts[Int(path.rawValue)] }

    private var facts: Facts {
        Facts(path: path, spelling: spelling, shape: shape, routeClass: routeClass, antiForgery: antiForgery,
              everyMethod: methods == nil)
    }

    /// `values` in memory of their own, for the process's lifetime.
    static func frozen(_ values: [Facts]) -> UnsafeBufferPointer<Facts> {
        let buffer = UnsafeMutableBufferPointer<Facts>.allocate(capacity: values.count)
        _ = buffer.initialize(from: values)
        return UnsafeBufferPointer(buffer)
    }

    /// The rows, in the order of `OwnPath`'s cases.
    static let table: [OwnEndpoint] = [
        OwnEndpoint(path: .login, spelling: "/login", shape: .fixed, methods: ["GET"], antiForgery: .never, routeClass: .login,
                    answer: .inTask { context, request, _ in await LoginEndpoint(context: context).respond(to: request) }),
        // `POST` for providers with `GATEHOUSE_RESPONSE_MODE=form_post` (the callback checks the method
        // against its provider's mode).
        OwnEndpoint(path: .callback, spelling: "/callback", shape: .fixed, methods: ["GET", "POST"], antiForgery: .never,
                    routeClass: .callback, answer: callback),
        OwnEndpoint(path: .user, spelling: "/user", shape: .fixed, methods: ["GET"], antiForgery: .always, routeClass: .user,
                    answer: .inTask { context, request, _ in await UserEndpoint(context: context).respond(to: request) }),
        OwnEndpoint(path: .logout, spelling: "/logout", shape: .fixed, methods: ["GET", "POST"], antiForgery: .unlessGET,
                    routeClass: .logout,
                    answer: .inTask { context, request, _ in await LogoutEndpoint(context: context).respond(to: request) }),
        OwnEndpoint(path: .backchannelLogout, spelling: "/backchannel-logout", shape: .fixed, methods: ["POST"],
                    antiForgery: .never, routeClass: .logout, answer: backchannelLogout),
        OwnEndpoint(path: .healthz, spelling: "/healthz", shape: .fixed, methods: nil, antiForgery: .never, routeClass: .ops,
                    answer: .beforeGate),
        // Asks the store: answered in a task, never on the loop.
        OwnEndpoint(path: .readyz, spelling: "/readyz", shape: .fixed, methods: nil, antiForgery: .never, routeClass: .ops,
                    answer: .inTask { context, _, _ in await OpsEndpoints.readiness(context) }),
        OwnEndpoint(path: .metrics, spelling: "/metrics", shape: .fixed, methods: nil, antiForgery: .never, routeClass: .ops,
                    answer: .beforeGate),
        OwnEndpoint(path: .providers, spelling: "/providers", shape: .fixed, methods: ["GET"], antiForgery: .never,
                    routeClass: .login, answer: .builtOnce { ProviderEndpoints.list($0.providers) }),
        // Every method: nginx's `auth_request` asks with the original request's. The anti-forgery
        // rule is the original method's (`ForwardAuthEndpoint`).
        OwnEndpoint(path: .auth, spelling: "/auth", shape: .fixed, methods: nil, antiForgery: .never, routeClass: .auth,
                    answer: .forwardAuth),
        OwnEndpoint(path: .jwks, spelling: "/.well-known/jwks.json", shape: .fixed, methods: ["GET"], antiForgery: .never,
                    routeClass: .ops, answer: .builtOnce { IdentityEndpoints.keySet($0.identities) }),
        OwnEndpoint(path: .sessions, spelling: "/sessions", shape: .fixed, methods: ["GET"], antiForgery: .always,
                    routeClass: .user,
                    answer: .inTask { context, request, _ in await SessionsEndpoint(context: context).list(request) }),
        OwnEndpoint(path: .sessionsRevoke, spelling: "/sessions/revoke", shape: .fixed, methods: ["POST"],
                    antiForgery: .always, routeClass: .user,
                    answer: .inTask { context, request, _ in await SessionsEndpoint(context: context).revoke(request) }),
        OwnEndpoint(path: .providerCallback, spelling: "/callback/", shape: .providerName, methods: ["GET", "POST"],
                    antiForgery: .never, routeClass: .callback, answer: callback),
        OwnEndpoint(path: .providerBackchannelLogout, spelling: "/backchannel-logout/", shape: .providerName,
                    methods: ["POST"], antiForgery: .never, routeClass: .logout, answer: backchannelLogout),
        OwnEndpoint(path: .frontchannelLogout, spelling: "/frontchannel-logout", shape: .fixed, methods: ["GET"],
                    antiForgery: .never, routeClass: .logout, answer: frontchannelLogout),
        OwnEndpoint(path: .providerFrontchannelLogout, spelling: "/frontchannel-logout/", shape: .providerName,
                    methods: ["GET"], antiForgery: .never, routeClass: .logout, answer: frontchannelLogout),
        // Fetched by the provider, never by the SPA: counted with the logins it belongs to.
        OwnEndpoint(path: .requestObject, spelling: "/request-object/", shape: .handle, methods: ["GET"], antiForgery: .never,
                    routeClass: .login,
                    answer: .inTask { context, _, handle in await RequestObjectEndpoint(context: context).respond(handle: handle ?? "") }),
    ]

    // The answers a fixed path and its provider's path share.
    private static let callback = Answer.inTask { context, request, name in
        await CallbackEndpoint(context: context, path: name).respond(to: request)
    }
    private static let backchannelLogout = Answer.inTask { context, request, name in
        await BackchannelLogoutEndpoint(context: context, path: name).respond(to: request)
    }
    private static let frontchannelLogout = Answer.inTaskOwnFields { context, request, name in
        await FrontChannelLogoutEndpoint(context: context, path: name).respond(to: request)
    }

    func requiresAntiForgery(method: String) -> Bool {
        Self.requiresAntiForgery(antiForgery, method: method)
    }

    static func requiresAntiForgery(_ antiForgery: AntiForgery, method: String) -> Bool {
        switch antiForgery {
        case .never: false
        case .always: true
        case .unlessGET: method != "GET"
        }
    }

    /// What follows this endpoint's prefix in `path` (a provider's name, a handle); nil for a
    /// fixed path.
    func name(in path: Substring) -> String? {
        guard shape != .fixed else { return nil }
        return String(path.utf8.dropFirst(spelling.utf8CodeUnitCount)) ?? ""
    }
}
