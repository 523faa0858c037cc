import HTTP1

/// The paths the gateway answers itself, recognised in one step from `OwnEndpoint.table`.
///
/// Every request is classified up to three times (fast path, handler, metrics); a proxied `/api/…`
/// path must not pay a string comparison per endpoint each time, so the length picks the candidates
/// first (integer compares over a table of plain values), and only a spelling of that length is
/// compared byte for byte.
enum OwnPath: UInt8, CaseIterable {
    // In the order of `OwnEndpoint.table`'s rows.
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

    // Written once, when first read, and never again (hence `nonisolated(unsafe)`): plain values no
    // reference count guards (`OwnEndpoint.Facts`).
    nonisolated(unsafe) private static let fixedSpellings =
        OwnEndpoint.frozen(OwnEndpoint.facts.filter { $0.shape == .fixed })
    /// `handle` rows before `providerName` rows: a handle's prefix is no provider's.
    nonisolated(unsafe) private static let prefixSpellings =
        OwnEndpoint.frozen(OwnEndpoint.facts.filter { $0.shape == .handle } + OwnEndpoint.facts.filter { $0.shape == .providerName })
    private static let requestObjectPrefix = OwnEndpoint.of(.requestObject).spelling
    /// The longest provider name in a provider's own path.
    private static let maximumNameLength = 32

    /// - Parameters:
    ///   - namedProviders: whether `providerName` paths (`/callback/NAME`, …) are ours
    ///     (`GATEHOUSE_PROVIDERS`); without it they stay the SPA's, as they always were.
    ///   - requestObjects: whether `handle` paths (`/request-object/…`) are ours (a provider passes
    ///     its request objects by reference); likewise the SPA's otherwise.
    init?(_ path: Substring, namedProviders: Bool = false, requestObjects: Bool = false) {
        let count = path.utf8.count
        let fixed = Self.fixedSpellings
        for index in fixed.indices where fixed[index].spelling.utf8CodeUnitCount == count {
            if Self.spells(path, fixed[index].spelling) {
                self = fixed[index].path
                return
            }
        }
        guard namedProviders || requestObjects else { return nil }
        let prefixed = Self.prefixSpellings
        for index in prefixed.indices {
            let spelling = prefixed[index]
            let length = spelling.spelling.utf8CodeUnitCount
            switch spelling.shape {
            case .handle: guard requestObjects, count > length else { continue }
            case .providerName: guard namedProviders, count > length, count <= length + Self.maximumNameLength else { continue }
            case .fixed: continue
            }
            if Self.spells(path.utf8.prefix(length), spelling.spelling) {
                self = spelling.path
                return
            }
        }
        return nil
    }

    /// Byte equality on contiguous storage: the generic `elementsEqual` over a Substring's UTF-8
    /// view (and over buffer pointers, about 260 instructions a call) was a visible part of
    /// answering `/healthz`.
    private static func spells(_ path: Substring.UTF8View.SubSequence, _ spelling: StaticString) -> Bool {
        spells(Substring(path), spelling)
    }

    /// The provider name or handle at the end of a prefix path (`/callback/NAME`); "" for a fixed path.
    static func providerName(in path: Substring, of own: OwnPath) -> String {
        OwnEndpoint.of(own).name(in: path) ?? ""
    }

    /// `path` as logs and spans may show it: a request object's handle (what lets anyone fetch the
    /// object) replaced by `{handle}`.
    static func withoutHandle(_ path: Substring) -> Substring {
        let prefix = requestObjectPrefix
        guard path.utf8.count > prefix.utf8CodeUnitCount,
              spells(path.utf8.prefix(prefix.utf8CodeUnitCount), prefix) else { return path }
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
