/// The paths the gateway answers itself, recognised in one step.
///
/// Every request is classified up to three times (fast path, handler, metrics); a proxied `/api/…`
/// path must not pay eight string comparisons each time, so the length picks the candidates first.
enum OwnPath {
    case login, callback, user, logout, backchannelLogout, healthz, readyz, metrics

    init?(_ path: Substring) {
        let candidate: OwnPath
        let spelling: StaticString
        switch path.utf8.count {
        case 5: (candidate, spelling) = (.user, "/user")
        case 6: (candidate, spelling) = (.login, "/login")
        case 7:
            if path.utf8.elementsEqual("/logout".utf8) { self = .logout; return }
            (candidate, spelling) = (.readyz, "/readyz")
        case 8:
            if path.utf8.elementsEqual("/healthz".utf8) { self = .healthz; return }
            (candidate, spelling) = (.metrics, "/metrics")
        case 9: (candidate, spelling) = (.callback, "/callback")
        case 19: (candidate, spelling) = (.backchannelLogout, "/backchannel-logout")
        default: return nil
        }
        let bytes = UnsafeBufferPointer(start: spelling.utf8Start, count: spelling.utf8CodeUnitCount)
        guard path.utf8.elementsEqual(bytes) else { return nil }
        self = candidate
    }
}
