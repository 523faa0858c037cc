/// What the gateway's own endpoints are, declared once: the methods each answers, whether it needs
/// the anti-forgery header, and the class the metrics and the access log count it under. The router
/// (`RequestRoute`), the method gate and the access log read this table; adding an endpoint is a
/// case of `OwnPath`, its row here and its handler's line in `Gateway.answer`.
struct OwnEndpoint {
    /// The methods it answers (`Allow` of a `405`); nil for every method.
    let methods: [String]?
    /// Whether the anti-forgery header is required, by method.
    let antiForgery: AntiForgery
    let routeClass: RouteClass

    enum AntiForgery {
        case never
        case always
        /// Every method but `GET` (`GET /logout` is the provider's front-channel logout).
        case unlessGET
    }

    static func of(_ path: OwnPath) -> OwnEndpoint {
        switch path {
        case .login, .providers: OwnEndpoint(methods: ["GET"], antiForgery: .never, routeClass: .login)
        case .callback, .providerCallback: OwnEndpoint(methods: ["GET"], antiForgery: .never, routeClass: .callback)
        case .user, .sessions: OwnEndpoint(methods: ["GET"], antiForgery: .always, routeClass: .user)
        case .sessionsRevoke: OwnEndpoint(methods: ["POST"], antiForgery: .always, routeClass: .user)
        case .logout: OwnEndpoint(methods: ["GET", "POST"], antiForgery: .unlessGET, routeClass: .logout)
        case .backchannelLogout, .providerBackchannelLogout:
            OwnEndpoint(methods: ["POST"], antiForgery: .never, routeClass: .logout)
        case .jwks: OwnEndpoint(methods: ["GET"], antiForgery: .never, routeClass: .ops)
        case .healthz, .readyz, .metrics: OwnEndpoint(methods: nil, antiForgery: .never, routeClass: .ops)
        }
    }

    func requiresAntiForgery(method: String) -> Bool {
        switch antiForgery {
        case .never: false
        case .always: true
        case .unlessGET: method != "GET"
        }
    }
}
