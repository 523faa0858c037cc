/// The two proactive-negotiation questions a static file server asks (RFC 9110 §12.5).
enum ContentNegotiation {
    /// True when `Accept-Encoding` lets the answer be gzip: `gzip` (or `x-gzip`) with q > 0, or `*`
    /// with q > 0 when gzip is not named. `gzip;q=0` refuses even when `*` allows everything. No field
    /// at all means "no preference" (RFC 9110 §12.5.3), but an old client that sends none may not
    /// decode gzip, so nothing is compressed for it.
    static func acceptsGzip(_ fieldValues: [String]) -> Bool {
        var gzip: Double?
        var wildcard: Double?
        for (coding, q) in weightedTokens(fieldValues) {
            switch coding {
            case "gzip", "x-gzip": gzip = max(gzip ?? 0, q)
            case "*": wildcard = max(wildcard ?? 0, q)
            default: continue
            }
        }
        if let gzip { return gzip > 0 }
        return (wildcard ?? 0) > 0
    }

    /// True when `Accept` names `text/html` itself with q > 0 — what a browser sends for a navigation.
    /// `*/*` and `text/*` do not count: `fetch()` and `<script>` send `*/*`, and a missing script
    /// must stay a `404` rather than become the SPA's `index.html`.
    static func explicitlyAcceptsHTML(_ fieldValues: [String]) -> Bool {
        weightedTokens(fieldValues).contains { $0.token == "text/html" && $0.q > 0 }
    }

    /// `token;param=x;q=0.5, other` → lowercased tokens with their q-value (1 when absent, 0 when
    /// malformed: a value that cannot be read is not an acceptance).
    static func weightedTokens(_ fieldValues: [String]) -> [(token: String, q: Double)] {
        var result: [(token: String, q: Double)] = []
        for value in fieldValues {
            for element in value.split(separator: ",") {
                let parameters = element.split(separator: ";")
                guard let first = parameters.first else { continue }
                let token = first.trimmingASCIIWhitespace().lowercased()
                guard !token.isEmpty else { continue }
                var q = 1.0
                for parameter in parameters.dropFirst() {
                    let pair = parameter.split(separator: "=", maxSplits: 1)
                    guard pair.count == 2, pair[0].trimmingASCIIWhitespace().lowercased() == "q" else { continue }
                    q = qValue(pair[1].trimmingASCIIWhitespace())
                }
                result.append((token, q))
            }
        }
        return result
    }

    /// RFC 9110 §12.4.2: `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`.
    private static func qValue(_ text: Substring) -> Double {
        guard text.utf8.count <= 5, text.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 46 }),
              let value = Double(text), value >= 0, value <= 1
        else { return 0 }
        return value
    }
}
