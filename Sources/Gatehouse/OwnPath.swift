import HTTP1

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
            if Self.spells(path, "/logout") { self = .logout; return }
            (candidate, spelling) = (.readyz, "/readyz")
        case 8:
            if Self.spells(path, "/healthz") { self = .healthz; return }
            (candidate, spelling) = (.metrics, "/metrics")
        case 9: (candidate, spelling) = (.callback, "/callback")
        case 19: (candidate, spelling) = (.backchannelLogout, "/backchannel-logout")
        default: return nil
        }
        guard Self.spells(path, spelling) else { return nil }
        self = candidate
    }

    /// Byte equality on contiguous storage: the generic `elementsEqual` over a Substring's UTF-8
    /// view (and over buffer pointers, about 260 instructions a call) was a visible part of
    /// answering `/healthz`.
    private static func spells(_ path: Substring, _ spelling: StaticString) -> Bool {
        let bytes = UnsafeBufferPointer(start: spelling.utf8Start, count: spelling.utf8CodeUnitCount)
        // `withUTF8`: a native string's own bytes (the view's `withContiguousStorageIfAvailable` on
        // a Substring goes through the generic `Slice`, ~300 instructions).
        var path = path
        return path.withUTF8 { ByteSearch.equal($0, bytes) }
    }
}
