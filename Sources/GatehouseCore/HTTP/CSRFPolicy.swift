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
        var fields = 0
        var ones = 0
        // On the bytes: one `1`, and nothing else but spaces and tabs, which can only be around it.
        headers.forEachValueBytes(headerName) { value in
            fields += 1
            guard fields == 1 else { return false }
            for byte in value {
                switch byte {
                case UInt8(ascii: "1"): ones += 1
                case 0x20, 0x09: break
                default: ones = 2; return false
                }
            }
            return true
        }
        guard fields == 1 else { return false }
        return ones == 1
    }
}
