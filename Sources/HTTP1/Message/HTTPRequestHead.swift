/// The request line and header fields of one request.
public struct HTTPRequestHead: Sendable, Equatable {
    public var method: String
    /// The request-target exactly as sent (origin-form for everything but `OPTIONS *` and CONNECT).
    public var target: String {
        didSet { queryOffset = Self.queryOffset(in: target) }
    }
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// The UTF-8 offset of the first `?` in `target`, or nil: found once, where the path and query
    /// were looked for three or four times per request.
    private var queryOffset: Int?

    public init(method: String, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = HTTPHeaders()) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        queryOffset = Self.queryOffset(in: target)
    }

    /// The same request line and fields (where the first `?` is, is not part of the value).
    public static func == (a: HTTPRequestHead, b: HTTPRequestHead) -> Bool {
        a.method == b.method && a.target == b.target && a.version == b.version && a.headers == b.headers
    }

    /// The target up to `?`, still percent-encoded.
    public var path: Substring {
        if let q = queryMark { return target[..<q] }
        return target[...]
    }

    /// The bytes after the first `?`, untouched; nil when there is no `?`.
    public var query: Substring? {
        guard let q = queryMark else { return nil }
        return target[target.utf8.index(after: q)...]
    }

    /// Where the first `?` is.
    private var queryMark: String.Index? {
        guard let queryOffset else { return nil }
        return target.utf8.index(target.utf8.startIndex, offsetBy: queryOffset)
    }

    /// Found in the target's contiguous UTF-8 (every native string has it): `UTF8View.firstIndex(of:)`
    /// steps through the view's indices at about 30 instructions a byte.
    private static func queryOffset(in target: String) -> Int? {
        let utf8 = target.utf8
        let offset: Int?? = utf8.withContiguousStorageIfAvailable { bytes in
            let found = ByteSearch.firstIndex(of: UInt8(ascii: "?"), in: bytes, from: 0, to: bytes.count)
            return found < bytes.count ? found : nil
        }
        switch offset {
        case .some(let found): return found
        case .none: return utf8.firstIndex(of: UInt8(ascii: "?")).map { utf8.distance(from: utf8.startIndex, to: $0) }
        }
    }

    /// RFC 9112 §9.3: HTTP/1.1 persists unless `Connection: close`; HTTP/1.0 only with `keep-alive`.
    public var keepAlive: Bool {
        guard headers.contains("Connection") else { return version != .http1_0 }
        if version == .http1_0 { return headers.hasToken("Connection", "keep-alive") }
        return !headers.hasToken("Connection", "close")
    }
}
