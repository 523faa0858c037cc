import HTTP1

/// Everything the multi thread needs to configure one easy handle: plain values, decided on the
/// async side from an `UpstreamRequest`.
struct CurlRequestPlan: Sendable, Equatable {
    enum Upload: Sendable, Equatable {
        /// No request body and no framing headers.
        case none
        /// `Content-Length: n` (0 included, for a bodiless POST/PUT/PATCH).
        case length(Int)
        /// Unknown length: libcurl sends `Transfer-Encoding: chunked`.
        case chunked
        /// A body already in memory (`CurlFetchClient`): libcurl keeps its own copy, so it can send
        /// the request again on a fresh connection (see `mayBeRepeated`).
        case whole([UInt8])
    }

    var url: String
    var method: String
    /// `Name: value` lines for CURLOPT_HTTPHEADER.
    var headerLines: [String]
    var upload: Upload
    /// The schemes libcurl may use (`CURLOPT_PROTOCOLS_STR`): `https` for upstreams.
    var protocols = "https"
    /// May libcurl send the request again when a reused connection died before any answer byte?
    /// For upstreams only a bodiless `GET`, `HEAD` or `OPTIONS` (see `CurlEasy.beforeSendingRequest`).
    var mayBeRepeated: Bool
    /// The whole exchange's limit (`CURLOPT_TIMEOUT_MS`); nil for none (upstreams stream for long).
    var totalTimeoutMilliseconds: Int?

    /// Fields libcurl must not get from the request: it writes `Host` from the URL and the framing
    /// from the upload mode, and `Expect` is always disabled below.
    private static let managed: Set<String> = ["host", "content-length", "transfer-encoding", "expect"]

    init(_ request: UpstreamRequest, bodyLength: Int?, hasBody: Bool) {
        let host = request.host.contains(":") ? "[\(request.host)]" : request.host
        url = "https://\(host):\(request.port)\(request.target)"
        method = request.method
        if hasBody {
            upload = bodyLength.map(Upload.length) ?? .chunked
        } else if ["POST", "PUT", "PATCH"].contains(request.method) {
            upload = .length(0)
        } else {
            upload = .none
        }
        mayBeRepeated = upload == .none && ["GET", "HEAD", "OPTIONS"].contains(request.method)
        headerLines = Self.headerLines(request.headers)
    }

    /// A whole request to an absolute `url` (`CurlFetchClient`), with its body if it has one.
    init(url: String, method: String, headers: HTTPHeaders, body: [UInt8]?, protocols: String,
         totalTimeoutMilliseconds: Int) {
        self.url = url
        self.method = method
        upload = body.map(Upload.whole) ?? .none
        self.protocols = protocols
        // One-shot calls (an OpenID provider's endpoints) are sent again on a fresh connection when a
        // kept one turns out dead before any answer byte, as every HTTP library does: no answer was
        // read, and the caller would otherwise fail a login on a provider's idle-connection close.
        mayBeRepeated = true
        self.totalTimeoutMilliseconds = totalTimeoutMilliseconds
        headerLines = Self.headerLines(headers)
    }

    /// `Name: value` lines for libcurl from the request's fields, less the ones it manages itself.
    private static func headerLines(_ fields: HTTPHeaders) -> [String] {
        var lines: [String] = []
        for field in fields where !Self.managed.contains(field.name.lowercased()) {
            // A NUL would cut the C string short and CR/LF would split the line: never forwarded.
            // (The server's parser already refuses them; this keeps the client safe on its own.)
            guard !Self.hasLineBreakOrNUL(field.name), !Self.hasLineBreakOrNUL(field.value), !field.name.isEmpty else {
                continue
            }
            // `Name;` is libcurl's spelling of an empty value (`Name:` would remove the field).
            lines.append(field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)")
        }
        // No `Expect: 100-continue` wait before the body; no `Accept: */*` the browser did not send.
        lines.append("Expect:")
        if !fields.contains("Accept") { lines.append("Accept:") }
        return lines
    }

    private static func hasLineBreakOrNUL(_ text: String) -> Bool {
        text.utf8.contains { $0 == 0 || $0 == 10 || $0 == 13 }
    }
}
