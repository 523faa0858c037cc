import HTTP1

/// Which headers cross the proxy, in each direction (RFC 9110 §7.6.1; SPEC "API routes").
///
/// Pure functions: the proxy decides framing (`Content-Length`/`chunked`) and the upstream
/// `Host` itself.
public enum ProxyHeaderPolicy {
    /// Connection-specific fields (RFC 9110 §7.6.1, plus the legacy `Keep-Alive` and
    /// `Proxy-Connection`, and the proxy-authentication pair meant for this hop only).
    public static let hopByHop = HeaderNameSet(["connection", "keep-alive", "proxy-connection", "te", "trailer",
                                                "transfer-encoding", "upgrade", "proxy-authorization",
                                                "proxy-authenticate"])

    /// Never forwarded upstream: hop-by-hop, the browser's credentials, what the gateway sets
    /// itself (`Host`, `X-Forwarded-Host`/`-Proto`, whoever sent them, and the `DPoP` proof of a
    /// bound session: a browser's own proof beside the gateway's would be forwarded as the
    /// user's), and the identity headers.
    static let upstreamAlwaysDropped = hopByHop.union(["cookie", "authorization", "host", "expect",
                                                       "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host",
                                                       "traceparent", "dpop"] + identityHeaders)
    /// Headers an upstream behind an authenticating proxy believes name the user (oauth2-proxy's,
    /// Apache's, the gateway's own assertion): a browser's copy of any of them is forged, on every
    /// route, signed in or out, whoever forwarded it (SPEC "Identity for your own APIs").
    public static let identityHeaders = ["x-forwarded-user", "x-forwarded-email", "x-forwarded-preferred-username",
                                         "x-forwarded-groups", "x-forwarded-access-token", "x-forwarded-provider", "x-auth-request-user",
                                         "x-auth-request-email", "x-auth-request-preferred-username",
                                         "x-auth-request-groups", "x-auth-request-access-token", "remote-user",
                                         "x-remote-user", "gatehouse-assertion"]
    /// Claims about the client or the original request that upstreams (and frameworks behind them)
    /// believe: the client's address, the port and path prefix it used, the URL it "really" asked
    /// for. Only a trusted proxy in front of Gatehouse may make them; from anyone else they are
    /// forged (`X-Original-URL`/`X-Rewrite-URL` bypass path-based rules in some frameworks).
    static let forwardingClaims = ["forwarded", "x-real-ip", "true-client-ip", "x-forwarded-port",
                                   "x-forwarded-prefix", "x-original-url", "x-rewrite-url", "x-client-ip",
                                   "cf-connecting-ip", "x-cluster-client-ip", "fastly-client-ip",
                                   "x-forwarded-server", "x-forwarded-scheme", "x-forwarded-ssl", "x-url-scheme",
                                   "x-original-host", "x-host"]
    /// Dropped when the peer is not a trusted proxy.
    static let upstreamDropped = upstreamAlwaysDropped.union(forwardingClaims)
    /// Never passed back to the browser: hop-by-hop, cookies of the upstream, and the framing we redo.
    static let downstreamDropped = hopByHop.union(["set-cookie", "set-cookie2", "content-length"])

    /// The headers to send upstream (both upstream clients send exactly these).
    ///
    /// Removes hop-by-hop fields and every field named in `Connection`, `Cookie`, the browser's
    /// `Authorization`, the CSRF header, `Host`, `Expect` (the gateway answers `100-continue`
    /// itself and streams the body), and any incoming `X-Forwarded-Proto`/`-Host`. The forwarding
    /// claims (`Forwarded`, `X-Real-IP`, `True-Client-IP`, `X-Forwarded-Port`, `X-Forwarded-Prefix`,
    /// `X-Original-URL`, `X-Rewrite-URL`, …) pass unchanged only from a trusted proxy and are
    /// removed otherwise. `X-Forwarded-For` keeps the incoming value (with the peer appended) only
    /// when the peer is a trusted proxy; otherwise it is the peer alone (an IPv4-mapped IPv6 peer
    /// written as IPv4). Adds `Authorization: <authorization>` (`Bearer <access token>`),
    /// `X-Forwarded-Proto` and `X-Forwarded-Host` from `GATEHOUSE_PUBLIC_URL` (`forwarding`).
    /// `Content-Length` is kept, even if `Connection` names it: it must agree with the body.
    /// `authorization` nil (routes with `auth=none`, or `auth=optional` signed out) adds none.
    /// `traceparent` is always the gateway's (`trace`: the browser's when valid, else a fresh one;
    /// nil takes it from `incoming`); `tracestate` passes untouched only beside a valid received one.
    public static func upstreamRequestHeaders(from incoming: HTTPHeaders, peerIP: String, authorization: String?,
                                              identity: [HTTPField.Checked] = [],
                                              forwarding: ProxyForwarding, trace: TraceParent? = nil) -> HTTPHeaders {
        upstreamRequestFields(from: incoming, peerIP: peerIP, authorization: authorization, identity: identity,
                              forwarding: forwarding, trace: trace ?? TraceParent.continuing(incoming)).headers
    }

    /// The same fields as the upstream client writes them: which of `incoming`'s fields pass (a bit
    /// each) and the values added, without a field list put together in between. The request's
    /// trace is decided by the caller (no optional trace copied on the proxy's path).
    public static func upstreamRequestFields(from incoming: HTTPHeaders, peerIP: String, authorization: String?,
                                             identity: [HTTPField.Checked] = [],
                                             forwarding: ProxyForwarding, trace: TraceParent) -> ForwardedRequestFields {
        upstreamRequestFields(passing: upstreamFieldPassing(from: incoming, UpstreamPassingInputs(
                                  peerIP: peerIP, passesTracestate: trace.isReceived, forwarding: forwarding)),
                              authorization: authorization, identity: identity, forwarding: forwarding, trace: trace)
    }

    /// `upstreamRequestFields` from the fields' passing decided before (`upstreamFieldPassing`, for
    /// the same `trace.isReceived`).
    public static func upstreamRequestFields(passing: UpstreamFieldPassing, authorization: String?,
                                             identity: [HTTPField.Checked] = [],
                                             forwarding: ProxyForwarding, trace: TraceParent) -> ForwardedRequestFields {
        ForwardedRequestFields(received: passing.received, passed: passing.passed, forwardedFor: passing.forwardedFor,
                               fixed: forwarding.addedFields, authorization: authorization, identity: identity, trace: trace)
    }

    /// Which of `incoming`'s fields pass and the `X-Forwarded-For` value (see
    /// `upstreamRequestHeaders`). Everything it depends on besides the fields is in `inputs`, the
    /// key a memo of its result compares (`RequestFieldMemo`): keep it that way.
    public static func upstreamFieldPassing(from incoming: HTTPHeaders, _ inputs: UpstreamPassingInputs) -> UpstreamFieldPassing {
        let (peerIP, passesTracestate, forwarding) = (inputs.peerIP, inputs.passesTracestate, inputs.forwarding)
        let named = namedInConnection(incoming, keeping: "content-length")
        let trusted = forwarding.trusts(peerIP: peerIP)
        let dropped = trusted ? forwarding.droppedFromTrusted : forwarding.droppedFromOthers
        // On the names' bytes: no String per field.
        var csrf = forwarding.csrfHeader
        let received: HTTPHeaders
        let passed: UInt64?
        (received, passed) = csrf.withUTF8 { csrf -> (HTTPHeaders, UInt64?) in
            func passes(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
                if dropped.contains(bytes: name) || ByteSearch.equalIgnoringASCIICase(name, csrf)
                    || (named?.contains(bytes: name) ?? false) { return false }
                if ByteSearch.firstIndex(of: UInt8(ascii: "_"), in: name, from: 0, to: name.count) < name.count,
                   !passesUnderscored(name) { return false }
                return passesTracestate || !ByteSearch.equalIgnoringASCIICase(name, "tracestate")
            }
            // CGI, WSGI (gunicorn < 22, wsgiref) and Rack (Puma < 6.4.3) read `_` and `-` alike, so
            // `X_Forwarded_User` is the identity header to them: nginx's default drops such names.
            func passesUnderscored(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
                guard forwarding.forwardsUnderscoreHeaders else { return false }
                return !forwarding.droppedFromOthers.contains(spellingOf: name)
                    && !Self.sameSpelling(name, csrf) && !(named?.contains(spellingOf: name) ?? false)
            }
            guard incoming.count <= 64 else {
                var kept = HTTPHeaders(minimumCapacity: incoming.count, bytes: incoming.encodedSize)
                kept.append(fieldsOf: incoming) { _, name, _ in passes(name) }
                return (kept, nil)
            }
            var mask: UInt64 = 0
            incoming.forEachField { index, name, _ in
                if passes(name) { mask |= 1 << UInt64(index) }
                return true
            }
            return (incoming, mask)
        }

        let peer = IPAddress.unmappedText(peerIP)
        let previous = trusted ? incoming.values("X-Forwarded-For").map { $0.trimmingASCIIWhitespace() }.filter { !$0.isEmpty } : []
        let forwardedFor = previous.isEmpty ? peer : (previous.map(String.init) + [peer]).joined(separator: ", ")
        return UpstreamFieldPassing(received: received, passed: passed, forwardedFor: forwardedFor)
    }

    /// True when `name` is `other` read as CGI reads names (`_` as `-`, any case).
    static func sameSpelling(_ name: UnsafeBufferPointer<UInt8>, _ other: UnsafeBufferPointer<UInt8>) -> Bool {
        guard name.count == other.count else { return false }
        func fold(_ x: UInt8) -> UInt8 { x == UInt8(ascii: "_") ? UInt8(ascii: "-") : (x &- 65 < 26 ? x | 0x20 : x) }
        for i in 0..<name.count where fold(name[i]) != fold(other[i]) { return false }
        return true
    }

    /// The upstream's response headers to pass to the browser: without hop-by-hop fields, fields
    /// named in `Connection`, `Set-Cookie` (the browser's only cookie is Gatehouse's), and
    /// `Content-Length`/`Transfer-Encoding` (the server re-frames the body).
    public static func downstreamResponseHeaders(from upstream: HTTPHeaders) -> HTTPHeaders {
        var present = SecurityHeaders.Present()
        return downstreamResponseHeaders(from: upstream, noting: &present)
    }

    /// As above, noting each kept field in `present` (the security headers then need no second pass).
    public static func downstreamResponseHeaders(from upstream: HTTPHeaders, noting present: inout SecurityHeaders.Present) -> HTTPHeaders {
        let named = namedInConnection(upstream, keeping: nil)
        // Room for the security headers the caller adds.
        var out = HTTPHeaders(minimumCapacity: upstream.count + 6, bytes: upstream.encodedSize + 1024)
        out.append(fieldsOf: upstream) { _, name, value in
            if downstreamDropped.contains(bytes: name) || (named?.contains(bytes: name) ?? false) { return false }
            present.note(name: name, value: value)
            return true
        }
        return out
    }

    /// The field names a `Connection` header lists beyond the hop-by-hop ones (which go anyway),
    /// except `keeping`; nil when there are none — the usual `Connection: keep-alive` costs no set.
    static func namedInConnection(_ headers: HTTPHeaders, keeping: String?) -> HeaderNameSet? {
        var extra: [String]? = nil
        // On the elements' bytes: `Connection: keep-alive` comes with nearly every request and
        // answer, and cutting and comparing Substrings for it cost about 1,500 instructions.
        headers.forEachTokenBytes("Connection") { token in
            if hopByHop.contains(bytes: token) || closeToken.contains(bytes: token) { return true }
            if let keeping, keeping.utf8.withContiguousStorageIfAvailable({ ByteSearch.equalIgnoringASCIICase($0, token) })
                ?? keeping.asciiCaseInsensitiveEquals(String(decoding: token, as: UTF8.self)) { return true }
            extra = (extra ?? []) + [String(decoding: token, as: UTF8.self)]
            return true
        }
        return extra.map { HeaderNameSet($0) }
    }

    private static let closeToken = HeaderNameSet(["close"])
}
