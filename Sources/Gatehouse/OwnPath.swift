import HTTP1

/// The paths the gateway answers itself, recognised in one step.
///
/// Every request is classified up to three times (fast path, handler, metrics); a proxied `/api/…`
/// path must not pay eight string comparisons each time, so the length picks the candidates first.
enum OwnPath {
    case login, callback, user, logout, backchannelLogout, healthz, readyz, metrics, providers
    /// `/auth`: forward-auth for an ingress in front (nginx `auth_request`, Traefik, Caddy).
    case auth
    /// `/.well-known/jwks.json`: the public keys of the identity assertions.
    case jwks
    /// `/sessions` and `/sessions/revoke`: "my sessions".
    case sessions, sessionsRevoke
    /// `/callback/NAME` and `/backchannel-logout/NAME` (only with `GATEHOUSE_PROVIDERS`).
    case providerCallback, providerBackchannelLogout
    /// `/frontchannel-logout` and `/frontchannel-logout/NAME`: OpenID Connect Front-Channel Logout.
    case frontchannelLogout, providerFrontchannelLogout
    /// `/request-object/{handle}`: a login's request object, fetched by its provider
    /// (`GATEHOUSE_REQUEST_OBJECT=reference`).
    case requestObject

    static let callbackPrefix: StaticString = "/callback/"
    static let backchannelLogoutPrefix: StaticString = "/backchannel-logout/"
    static let frontchannelLogoutPrefix: StaticString = "/frontchannel-logout/"
    static let requestObjectPrefix: StaticString = "/request-object/"

    /// - Parameters:
    ///   - namedProviders: whether `/callback/NAME` and `/backchannel-logout/NAME` are ours
    ///     (`GATEHOUSE_PROVIDERS`); without it they stay the SPA's, as they always were.
    ///   - requestObjects: whether `/request-object/…` is ours (a provider passes its request
    ///     objects by reference); likewise the SPA's otherwise.
    init?(_ path: Substring, namedProviders: Bool = false, requestObjects: Bool = false) {
        let count = path.utf8.count
        if let fixed = Self.fixedPath(path, count: count) {
            self = fixed
            return
        }
        if requestObjects, count > 16, Self.spells(path.utf8.prefix(16), Self.requestObjectPrefix) {
            self = .requestObject
            return
        }
        // A provider's own path: the prefix and a name of 1–32 characters (any length may also be
        // a fixed path's: those were tried first).
        guard namedProviders else { return nil }
        if count > 10, count <= 42, Self.spells(path.utf8.prefix(10), Self.callbackPrefix) {
            self = .providerCallback
            return
        }
        if count > 20, count <= 52, Self.spells(path.utf8.prefix(20), Self.backchannelLogoutPrefix) {
            self = .providerBackchannelLogout
            return
        }
        if count > 21, count <= 53, Self.spells(path.utf8.prefix(21), Self.frontchannelLogoutPrefix) {
            self = .providerFrontchannelLogout
            return
        }
        return nil
    }

    /// The fixed path `path` spells, chosen by its length first.
    private static func fixedPath(_ path: Substring, count: Int) -> OwnPath? {
        let candidate: OwnPath
        let spelling: StaticString
        switch count {
        case 5:
            if spells(path, "/user") { return .user }
            (candidate, spelling) = (.auth, "/auth")
        case 6: (candidate, spelling) = (.login, "/login")
        case 7:
            if spells(path, "/logout") { return .logout }
            (candidate, spelling) = (.readyz, "/readyz")
        case 8:
            if spells(path, "/healthz") { return .healthz }
            (candidate, spelling) = (.metrics, "/metrics")
        case 9:
            if spells(path, "/sessions") { return .sessions }
            (candidate, spelling) = (.callback, "/callback")
        case 10: (candidate, spelling) = (.providers, "/providers")
        case 16: (candidate, spelling) = (.sessionsRevoke, "/sessions/revoke")
        case 19: (candidate, spelling) = (.backchannelLogout, "/backchannel-logout")
        case 20: (candidate, spelling) = (.frontchannelLogout, "/frontchannel-logout")
        case 22: (candidate, spelling) = (.jwks, "/.well-known/jwks.json")
        default: return nil
        }
        return spells(path, spelling) ? candidate : nil
    }

    /// Byte equality on contiguous storage: the generic `elementsEqual` over a Substring's UTF-8
    /// view (and over buffer pointers, about 260 instructions a call) was a visible part of
    /// answering `/healthz`.
    private static func spells(_ path: Substring.UTF8View.SubSequence, _ spelling: StaticString) -> Bool {
        spells(Substring(path), spelling)
    }

    /// The provider name at the end of a provider's own path (`/callback/NAME`).
    static func providerName(in path: Substring, of own: OwnPath) -> String {
        switch own {
        case .providerCallback: String(path.utf8.dropFirst(callbackPrefix.utf8CodeUnitCount)) ?? ""
        case .providerBackchannelLogout: String(path.utf8.dropFirst(backchannelLogoutPrefix.utf8CodeUnitCount)) ?? ""
        case .providerFrontchannelLogout: String(path.utf8.dropFirst(frontchannelLogoutPrefix.utf8CodeUnitCount)) ?? ""
        case .requestObject: String(path.utf8.dropFirst(requestObjectPrefix.utf8CodeUnitCount)) ?? ""
        default: ""
        }
    }

    /// `path` as logs and spans may show it: a request object's handle (what lets anyone fetch the
    /// object) replaced by `{handle}`.
    static func withoutHandle(_ path: Substring) -> Substring {
        guard path.utf8.count > 16, spells(path.utf8.prefix(16), requestObjectPrefix) else { return path }
        return "/request-object/{handle}"
    }

    private static func spells(_ path: Substring, _ spelling: StaticString) -> Bool {
        let bytes = UnsafeBufferPointer(start: spelling.utf8Start, count: spelling.utf8CodeUnitCount)
        // `withUTF8`: a native string's own bytes (the view's `withContiguousStorageIfAvailable` on
        // a Substring goes through the generic `Slice`, ~300 instructions).
        var path = path
        return path.withUTF8 { ByteSearch.equal($0, bytes) }
    }
}
