/// The outcome of matching a request path against the routes.
public enum RouteMatch: Sendable, Equatable {
    /// Forward to `route`, with the path the upstream receives (the caller appends `?query`
    /// byte for byte).
    case forward(route: UpstreamRoute, upstreamPath: String)
    /// The path is under `route` but could escape its prefix after decoding (dot segments,
    /// encoded `/` or `\`): answer `400` and forward nothing.
    case refused(route: UpstreamRoute)
}

/// Maps request paths to upstream routes: the longest prefix wins, on whole path segments only,
/// matched on the path's canonical form (RFC 3986 §6.2.2: escapes of unreserved characters
/// decoded), which is also what is forwarded.
///
/// For example: with `/api=http://up/v1`, `match(path: "/api/x")` is
/// `.forward(route, upstreamPath: "/v1/x")`, `match(path: "/apix")` is nil.
///
/// A path that an upstream (or a framework behind it) could read as a more specific route's
/// prefix than the one it matches is refused (SPEC "Routing and header names cannot be
/// re-spelled"): with `/api` and `/api/admin`, `/api//admin`, `/api/admin;x/` and `/api/Admin/` are
/// each a `400`, never `/api`'s policy over `/api/admin`'s upstream path.
public struct RouteTable: Sendable, Equatable {
    /// Longest prefix first.
    public let routes: [UpstreamRoute]
    /// Each route's prefix as bytes, in the same order (compared on every request).
    private let prefixes: [[UInt8]]
    /// Each prefix's segments as a lenient reader compares them: lowercase, without `;params`.
    private let looseSegments: [[[UInt8]]]

    public init(_ routes: [UpstreamRoute]) {
        self.routes = routes.sorted { $0.prefix.utf8.count > $1.prefix.utf8.count }
        prefixes = self.routes.map { Array($0.prefix.utf8) }
        looseSegments = self.routes.map { route in
            route.prefix.lowercased().split(separator: "/").map { Array($0.prefix { $0 != ";" }.utf8) }
        }
    }

    public static func == (a: RouteTable, b: RouteTable) -> Bool { a.routes == b.routes }

    public var isEmpty: Bool { routes.isEmpty }

    /// Matches the request path as received (`HTTPRequestHead.path`, still percent-encoded).
    /// - Returns: nil when no route covers the path.
    public func match(path: Substring) -> RouteMatch? {
        // The route and the verdict on the path's bytes (Substring cuts and the generic views cost
        // about 700 instructions per proxied request). `withUTF8` reads a native string's own
        // bytes; `utf8.withContiguousStorageIfAvailable` on a Substring went through the generic
        // `Slice` (about 300 instructions a call).
        var bytes = path
        return bytes.withUTF8 { raw -> RouteMatch? in
            let shape = CanonicalPath.Shape(raw)
            guard shape.mayBeRespelled else {
                guard let index = routeIndex(raw) else { return nil }
                return verdict(index, path: raw)
            }
            guard shape.hasEscapes else { return respelledMatch(raw, malformed: false) }
            let canonical = CanonicalPath.decodingUnreserved(raw)
            return canonical.bytes.withUnsafeBufferPointer { respelledMatch($0, malformed: canonical.malformed) }
        }
    }

    /// The match of a canonical path that a lenient reader might take for a more specific route:
    /// refused when it would (or when its escapes are malformed), else as `verdict`.
    private func respelledMatch(_ path: UnsafeBufferPointer<UInt8>, malformed: Bool) -> RouteMatch? {
        // Under no route as spelled, nothing is forwarded: the static files answer, whatever a
        // lenient reader would make of it.
        guard let index = routeIndex(path) else { return nil }
        if malformed || looseRouteIndex(path) != index { return .refused(route: routes[index]) }
        return verdict(index, path: path)
    }

    /// The match for route `index` of the canonical `path`: refused when its rest could escape the
    /// prefix, else forwarded with that path (the prefix replaced when the route says so).
    private func verdict(_ index: Int, path: UnsafeBufferPointer<UInt8>) -> RouteMatch {
        let route = routes[index]
        let rest = UnsafeBufferPointer(rebasing: path[prefixes[index].count...])
        guard Self.isSafeRemainder(bytes: rest) else { return .refused(route: route) }
        let upstreamPath: String
        if let replacement = route.replacementPath {
            let joined = replacement + String(decoding: rest, as: UTF8.self)
            upstreamPath = joined.isEmpty ? "/" : joined
        } else {
            upstreamPath = String(decoding: path, as: UTF8.self)
        }
        return .forward(route: route, upstreamPath: upstreamPath)
    }

    /// The first (longest) route whose prefix `path` names to a lenient reader: empty segments
    /// skipped, `;params` (also as `%3B`) cut from each segment, ASCII case folded.
    private func looseRouteIndex(_ path: UnsafeBufferPointer<UInt8>) -> Int? {
        looseSegments.firstIndex { CanonicalPath.looselyStarts(path, with: $0) }
    }

    /// The index of the first (longest) route whose prefix `path` starts with, whole segments.
    private func routeIndex(_ path: UnsafeBufferPointer<UInt8>) -> Int? {
        prefixes.firstIndex { prefix in prefix.withUnsafeBufferPointer { Self.hasSegmentPrefix(path, $0) } }
    }

    /// True when `path` falls under some route's prefix (whole segments), without building the
    /// upstream path: the cheap test the router and the metrics use to tell API from static paths.
    public func covers(path: Substring) -> Bool {
        var bytes = path
        return bytes.withUTF8 { routeIndex($0) != nil }
    }

    /// True when `path` is `prefix` or continues it with `/` (whole segments), compared as bytes.
    @inline(__always)
    static func hasSegmentPrefix(_ path: UnsafeBufferPointer<UInt8>, _ prefix: UnsafeBufferPointer<UInt8>) -> Bool {
        guard path.count >= prefix.count else { return false }
        for i in 0..<prefix.count where path[i] != prefix[i] { return false }
        return path.count == prefix.count || path[prefix.count] == UInt8(ascii: "/")
    }

    /// False when `rest` holds a dot segment (`.`, `..`, also as `%2e`, or followed by `;params` or
    /// `%3bparams` as some servers strip them), an encoded slash or backslash, a raw backslash, or a control
    /// character — anything an upstream might resolve outside the prefix.
    ///
    /// One pass over the bytes without allocating: it runs on every proxied request.
    static func isSafeRemainder(bytes p: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = p.count
        var i = 0
        // Per segment: how many (possibly encoded) dots, whether anything else, whether in `;params`.
        var dots = 0, other = false, params = false
        while i < n {
            let b = p[i]
            if b < 0x20 || b == 0x7F || b == UInt8(ascii: "\\") { return false }
            if b == UInt8(ascii: "/") {
                if !other && (dots == 1 || dots == 2) { return false }
                dots = 0; other = false; params = false
                i += 1
                continue
            }
            if b == UInt8(ascii: "%"), i + 2 < n {
                // ASCII letters fold to lower case with 0x20; digits are unchanged by it.
                let high = p[i + 1] | 0x20, low = p[i + 2] | 0x20
                if (high == UInt8(ascii: "2") && low == UInt8(ascii: "f"))
                    || (high == UInt8(ascii: "5") && low == UInt8(ascii: "c"))
                    || (high == UInt8(ascii: "0") && low == UInt8(ascii: "0")) { return false }
                // `%3b` is a `;` to an upstream that decodes before it strips `;params`.
                if high == UInt8(ascii: "3") && low == UInt8(ascii: "b") {
                    params = true
                } else if !params {
                    if high == UInt8(ascii: "2") && low == UInt8(ascii: "e") { dots += 1 } else { other = true }
                }
                i += 3
                continue
            }
            if b == UInt8(ascii: ";") {
                params = true
            } else if !params {
                if b == UInt8(ascii: ".") { dots += 1 } else { other = true }
            }
            i += 1
        }
        return !(!other && (dots == 1 || dots == 2))
    }

    /// `.` or `..`, with dots possibly percent-encoded and a `;parameter` tail ignored (used when
    /// validating configured prefixes).
    static func isDotSegment(_ segment: Substring) -> Bool {
        var s = Substring(segment.lowercased().replacingAll("%3b", with: ";"))
        if let semicolon = s.firstIndex(of: ";") { s = s[..<semicolon] }
        let decoded = String(s).replacingAll("%2e", with: ".")
        return decoded == "." || decoded == ".."
    }
}

extension String {
    /// Replaces every occurrence of `target` (non-empty) without Foundation.
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let r = rest.firstRange(of: target) {
            out += rest[..<r.lowerBound]
            out += replacement
            rest = rest[r.upperBound...]
        }
        out += rest
        return out
    }
}
