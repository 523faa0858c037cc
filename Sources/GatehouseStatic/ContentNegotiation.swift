import HTTP1

/// The two proactive-negotiation questions a static file server asks (RFC 9110 §12.5).
enum ContentNegotiation {
    /// True when `Accept-Encoding` lets the answer be gzip: `gzip` (or `x-gzip`) with q > 0, or `*`
    /// with q > 0 when gzip is not named. `gzip;q=0` refuses even when `*` allows everything. No field
    /// at all means "no preference" (RFC 9110 §12.5.3), but an old client that sends none may not
    /// decode gzip, so nothing is compressed for it.
    ///
    /// Reads the fields' bytes in place (the same elements, parameters and q-values as
    /// `weightedTokens`): this runs on every static request, where splitting into arrays of
    /// lowercased strings was a tenth of the user time.
    static func acceptsGzip(_ headers: HTTPHeaders) -> Bool {
        var preference = GzipPreference()
        headers.forEachValue("Accept-Encoding") { value in
            let scanned: Void? = value.utf8.withContiguousStorageIfAvailable { preference.scan($0) }
            if scanned == nil { Array(value.utf8).withUnsafeBufferPointer { preference.scan($0) } }
            return true
        }
        return preference.accepts
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

/// The q-values of `gzip`/`x-gzip` and of `*` met so far in `Accept-Encoding` values.
private struct GzipPreference {
    var gzip: Double?
    var wildcard: Double?

    var accepts: Bool {
        if let gzip { return gzip > 0 }
        return (wildcard ?? 0) > 0
    }

    /// One field value: elements between commas, each `token *( ";" parameter )`; empty elements
    /// and empty `;` pieces are skipped, as `split` skips them in `weightedTokens`.
    mutating func scan(_ bytes: UnsafeBufferPointer<UInt8>) {
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
            element(bytes, start, end)
            start = end + 1
        }
    }

    private enum Coding { case gzip, wildcard }

    private mutating func element(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) {
        var coding: Coding?
        var q = 1.0
        var first = true
        var piece = start
        while piece < end {
            var pieceEnd = piece
            while pieceEnd < end, bytes[pieceEnd] != UInt8(ascii: ";") { pieceEnd += 1 }
            defer { piece = pieceEnd + 1 }
            guard pieceEnd > piece else { continue }
            if first {
                first = false
                let (from, to) = Self.trimmed(bytes, piece, pieceEnd)
                guard from < to else { return }  // an empty token: the element counts for nothing
                if Self.equalsIgnoringCase(bytes, from, to, "gzip") || Self.equalsIgnoringCase(bytes, from, to, "x-gzip") {
                    coding = .gzip
                } else if to - from == 1, bytes[from] == UInt8(ascii: "*") {
                    coding = .wildcard
                } else {
                    return  // another coding: its q-value does not matter here
                }
            } else if let value = Self.qParameter(bytes, piece, pieceEnd) {
                q = value
            }
        }
        switch coding {
        case .gzip: gzip = max(gzip ?? 0, q)
        case .wildcard: wildcard = max(wildcard ?? 0, q)
        case nil: break
        }
    }

    /// `name=value` split at the first `=` after any leading `=`s (as `split(separator: "=",
    /// maxSplits: 1)` does); the q-value when the name is `q`, nil for any other parameter.
    private static func qParameter(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Double? {
        var nameStart = start
        while nameStart < end, bytes[nameStart] == UInt8(ascii: "=") { nameStart += 1 }
        var equals = nameStart
        while equals < end, bytes[equals] != UInt8(ascii: "=") { equals += 1 }
        guard equals < end, equals + 1 < end else { return nil }  // no value: not a parameter
        let (nameFrom, nameTo) = trimmed(bytes, nameStart, equals)
        guard nameTo - nameFrom == 1, bytes[nameFrom] | 0x20 == UInt8(ascii: "q") else { return nil }
        let (from, to) = trimmed(bytes, equals + 1, end)
        // RFC 9110 §12.4.2: at most "0.000"/"1.000"; anything unreadable counts as 0.
        guard to - from <= 5 else { return 0 }
        for index in from..<to where !(bytes[index] >= 48 && bytes[index] <= 57) && bytes[index] != 46 { return 0 }
        guard let value = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[from..<to]), as: UTF8.self)),
              value >= 0, value <= 1
        else { return 0 }
        return value
    }

    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> (Int, Int) {
        var from = start, to = end
        while from < to, bytes[from] == 0x20 || bytes[from] == 0x09 { from += 1 }
        while to > from, bytes[to - 1] == 0x20 || bytes[to - 1] == 0x09 { to -= 1 }
        return (from, to)
    }

    private static func equalsIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int,
                                           _ lowercase: StaticString) -> Bool {
        guard to - from == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for offset in 0..<(to - from) {
            let byte = bytes[from + offset]
            let folded = byte >= 65 && byte <= 90 ? byte | 0x20 : byte
            if folded != expected[offset] { return false }
        }
        return true
    }
}
