

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
    }

    var url: String
    var method: String
    /// `Name: value` lines for CURLOPT_HTTPHEADER.
    var headerLines: [String]
    var upload: Upload

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
        var lines: [String] = []
        for field in request.headers where !Self.managed.contains(field.name.lowercased()) {
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
        if !request.headers.contains("Accept") { lines.append("Accept:") }
        headerLines = lines
    }

    private static func hasLineBreakOrNUL(_ text: String) -> Bool {
        text.utf8.contains { $0 == 0 || $0 == 10 || $0 == 13 }
    }
}
