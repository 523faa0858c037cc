/// What the gateway's own endpoints are, declared once: the methods each answers, whether it needs
/// the anti-forgery header, and the class the metrics and the access log count it under. The router
/// (`RequestRoute`), the method gate and the access log read this table; adding an endpoint is a
/// case of `OwnPath`, its row here and its handler's line in `Gateway.answer`.
struct OwnEndpoint: Sendable {
    /// The methods it answers (`Allow` of a `405`); nil for every method.
    let methods: [String]?
    /// Whether the anti-forgery header is required, by method.
    let antiForgery: AntiForgery
    let routeClass: RouteClass

    enum AntiForgery: Sendable {
        case never
        case always
        /// Every method but `GET` (`GET /logout` is the provider's front-channel logout).
        case unlessGET
    }

    static func of(_ path: OwnPath) -> OwnEndpoint {
        switch path {
        case .login, .providers: login
        case .callback, .providerCallback: callback
        case .user, .sessions: user
        case .sessionsRevoke: sessionsRevoke
        case .logout: logout
        case .backchannelLogout, .providerBackchannelLogout: backchannelLogout
        case .frontchannelLogout, .providerFrontchannelLogout: frontchannelLogout
        case .jwks: jwks
        case .requestObject: requestObject
        case .healthz, .readyz, .metrics: operations
        case .auth: forwardAuth
        }
    }

    // The rows, made once (the router asks for every request to an own path).
    private static let login = OwnEndpoint(methods: ["GET"], antiForgery: .never, routeClass: .login)
    /// `POST` for providers with `GATEHOUSE_RESPONSE_MODE=form_post` (the callback checks the method
    /// against its provider's mode).
    private static let callback = OwnEndpoint(methods: ["GET", "POST"], antiForgery: .never, routeClass: .callback)
    private static let user = OwnEndpoint(methods: ["GET"], antiForgery: .always, routeClass: .user)
    private static let sessionsRevoke = OwnEndpoint(methods: ["POST"], antiForgery: .always, routeClass: .user)
    private static let logout = OwnEndpoint(methods: ["GET", "POST"], antiForgery: .unlessGET, routeClass: .logout)
    private static let backchannelLogout = OwnEndpoint(methods: ["POST"], antiForgery: .never, routeClass: .logout)
    private static let frontchannelLogout = OwnEndpoint(methods: ["GET"], antiForgery: .never, routeClass: .logout)
    private static let jwks = OwnEndpoint(methods: ["GET"], antiForgery: .never, routeClass: .ops)
    /// Fetched by the provider, never by the SPA: counted with the logins it belongs to.
    private static let requestObject = OwnEndpoint(methods: ["GET"], antiForgery: .never, routeClass: .login)
    /// Every method: nginx's `auth_request` asks with the original request's. The anti-forgery rule
    /// is the original method's (`ForwardAuthEndpoint`).
    private static let forwardAuth = OwnEndpoint(methods: nil, antiForgery: .never, routeClass: .auth)
    private static let operations = OwnEndpoint(methods: nil, antiForgery: .never, routeClass: .ops)

    func requiresAntiForgery(method: String) -> Bool {
        switch antiForgery {
        case .never: false
        case .always: true
        case .unlessGET: method != "GET"
        }
    }
}
