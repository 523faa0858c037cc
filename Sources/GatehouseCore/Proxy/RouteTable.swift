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

    public init(_ routes: [UpstreamRoute]) {
        self.routes = routes.sorted { $0.prefix.utf8.count > $1.prefix.utf8.count }
    }

    public var isEmpty: Bool { routes.isEmpty }

    /// Matches the still-percent-encoded request path (`HTTPRequestHead.path`).
    /// - Returns: nil when no route covers the path.
    public func match(path: Substring) -> RouteMatch? {
        for route in routes {
            // Byte comparison: prefixes are ASCII, and paths are case- and normalization-sensitive.
            guard Self.hasSegmentPrefix(path, route.prefix),
                  let cut = path.utf8.index(path.utf8.startIndex, offsetBy: route.prefix.utf8.count, limitedBy: path.utf8.endIndex)
            else { continue }
            let rest = path[cut...]
            guard rest.isEmpty || rest.first == "/" else { continue }
            guard RouteTable.isSafeRemainder(rest) else { return .refused(route: route) }
            let upstreamPath: String
            if let replacement = route.replacementPath {
                let joined = replacement + rest
                upstreamPath = joined.isEmpty ? "/" : joined
            } else {
                upstreamPath = String(path)
            }
            return .forward(route: route, upstreamPath: upstreamPath)
        }
        return nil
    }

    /// True when `path` falls under some route's prefix (whole segments), without building the
    /// upstream path: the cheap test the router and the metrics use to tell API from static paths.
    public func covers(path: Substring) -> Bool {
        routes.contains { Self.hasSegmentPrefix(path, $0.prefix) }
    }

    /// True when `path` is `prefix` or continues it with `/` (whole segments), compared as bytes.
    /// On contiguous bytes: the generic `starts(with:)` over a Substring's UTF-8 view cost more
    /// than the rest of routing, and both run on every request.
    static func hasSegmentPrefix(_ path: Substring, _ prefix: String) -> Bool {
        let verdict = path.utf8.withContiguousStorageIfAvailable { p in
            prefix.utf8.withContiguousStorageIfAvailable { q -> Bool in
                guard p.count >= q.count else { return false }
                for i in 0..<q.count where p[i] != q[i] { return false }
                return p.count == q.count || p[q.count] == UInt8(ascii: "/")
            }
        }
        if let verdict, let verdict { return verdict }
        guard path.utf8.starts(with: prefix.utf8) else { return false }
        let rest = path.utf8.dropFirst(prefix.utf8.count)
        return rest.isEmpty || rest.first == UInt8(ascii: "/")
    }

    /// False when `rest` holds a dot segment (`.`, `..`, also as `%2e`, or followed by `;params`
    /// as some servers strip them), an encoded slash or backslash, a raw backslash, or a control
    /// character — anything an upstream might resolve outside the prefix.
    ///
    /// One pass over the bytes without allocating: it runs on every proxied request.
    static func isSafeRemainder(_ rest: Substring) -> Bool {
        if let verdict = rest.utf8.withContiguousStorageIfAvailable({ isSafeRemainder(bytes: $0) }) { return verdict }
        return Array(rest.utf8).withUnsafeBufferPointer { isSafeRemainder(bytes: $0) }
    }

    private static func isSafeRemainder(bytes p: UnsafeBufferPointer<UInt8>) -> Bool {
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
                if !params {
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
        var s = segment
        if let semicolon = s.firstIndex(of: ";") { s = s[..<semicolon] }
        let decoded = s.lowercased().replacingAll("%2e", with: ".")
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
