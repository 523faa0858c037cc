import HTTP1

/// The anti-forgery rule of the SPEC: every `/user`, `POST /logout` and API request carries the
/// CSRF header (default `X-CSRF`) with the value `1`.
///
/// A cross-site form or image cannot set a custom header, and a cross-site `fetch` that sets one
/// needs a CORS preflight Gatehouse never grants, so the header proves the request came from the
/// SPA's own origin.
public enum CSRFPolicy {
    /// True when exactly one `headerName` field is present and its value is exactly `1`.
    public static func check(_ headers: HTTPHeaders, headerName: String) -> Bool {
        var value: String? = nil
        var several = false
        headers.forEachValue(headerName) { found in
            several = value != nil
            value = found
            return !several
        }
        guard !several, let value else { return false }
        // On the bytes (the generic comparison of a trimmed Substring cost a thousand instructions
        // a request): one `1`, and nothing else but spaces and tabs, which can only be around it.
        var ones = 0
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "1"): ones += 1
            case 0x20, 0x09: break
            default: return false
            }
        }
        return ones == 1
    }
}
