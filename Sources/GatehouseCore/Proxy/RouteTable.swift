/// The outcome of matching a request path against the routes.
public enum RouteMatch: Sendable, Equatable {
    /// Forward to `route`, with the path the upstream receives (the caller appends `?query`
    /// byte for byte).
    case forward(route: UpstreamRoute, upstreamPath: String)
    /// The path is under `route` but could escape its prefix after decoding (dot segments,
    /// encoded `/` or `\`): answer `400` and forward nothing.
    case refused(route: UpstreamRoute)
}

/// Maps request paths to upstream routes: the longest prefix wins, on whole path segments only.
///
/// For example: with `/api=http://up/v1`, `match(path: "/api/x")` is
/// `.forward(route, upstreamPath: "/v1/x")`, `match(path: "/apix")` is nil.
public struct RouteTable: Sendable, Equatable {
    /// Longest prefix first.
    public let routes: [UpstreamRoute]
    /// Each route's prefix as bytes, in the same order (compared on every request).
    private let prefixes: [[UInt8]]

    public init(_ routes: [UpstreamRoute]) {
        self.routes = routes.sorted { $0.prefix.utf8.count > $1.prefix.utf8.count }
        prefixes = self.routes.map { Array($0.prefix.utf8) }
    }

    public static func == (a: RouteTable, b: RouteTable) -> Bool { a.routes == b.routes }

    public var isEmpty: Bool { routes.isEmpty }

    /// Matches the still-percent-encoded request path (`HTTPRequestHead.path`).
    /// - Returns: nil when no route covers the path.
    public func match(path: Substring) -> RouteMatch? {
        // The route and the verdict on the path's bytes, in one pass (Substring cuts and the
        // generic views cost about 700 instructions per proxied request). `withUTF8` reads a
        // native string's own bytes; `utf8.withContiguousStorageIfAvailable` on a Substring went
        // through the generic `Slice` (about 300 instructions a call).
        var bytes = path
        let found = bytes.withUTF8 { match(bytes: $0) }
        guard let found else { return nil }
        let route = routes[found.index]
        guard found.safe else { return .refused(route: route) }
        let upstreamPath: String
        if let replacement = route.replacementPath {
            let rest = path[path.utf8.index(path.utf8.startIndex, offsetBy: prefixes[found.index].count)...]
            let joined = replacement + rest
            upstreamPath = joined.isEmpty ? "/" : joined
        } else {
            upstreamPath = String(path)
        }
        return .forward(route: route, upstreamPath: upstreamPath)
    }

    /// The first (longest) route whose prefix `path` starts with, whole segments, and whether the
    /// rest is safe to forward.
    private func match(bytes path: UnsafeBufferPointer<UInt8>) -> (index: Int, safe: Bool)? {
        guard let index = routeIndex(path) else { return nil }
        return (index, Self.isSafeRemainder(bytes: UnsafeBufferPointer(rebasing: path[prefixes[index].count...])))
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
