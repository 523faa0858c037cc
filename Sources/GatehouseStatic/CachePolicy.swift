/// The `Cache-Control` of a file.
///
/// - HTML is `no-cache`: the browser revalidates the entry page every time (cheap: a `304`), so a
///   deployment is seen at once.
/// - Fingerprinted assets (`app.3f9a1c2b.js`, Vite's `index-BdX3kP9q.js`) never change under their
///   name: `public, max-age=31536000, immutable`.
/// - Everything else is `no-cache`: correct first, fast second.
enum CachePolicy {
    static let revalidate = "no-cache"
    static let immutable = "public, max-age=31536000, immutable"

    static func cacheControl(fileName: String, mediaType: MediaType) -> String {
        if mediaType.isHTML { return revalidate }
        return isFingerprinted(fileName) ? immutable : revalidate
    }

    /// True when the name carries a content hash: `name.<hash>.ext` or `name-<hash>.ext`, where the
    /// hash is at least 8 base64url characters. A false positive would pin a changing file in browser
    /// caches for a year, so plain words do not count: the hash must contain a digit or mix upper-
    /// and lower-case letters (`main.application.js` is not fingerprinted).
    static func isFingerprinted(_ fileName: String) -> Bool {
        let name = Array(fileName.utf8)
        guard let lastDot = name.lastIndex(of: UInt8(ascii: ".")), lastDot > 0 else { return false }
        let stem = name[..<lastDot]
        // `name.<hash>.ext`
        if let dot = stem.lastIndex(of: UInt8(ascii: ".")), dot > stem.startIndex,
           looksLikeHash(stem[(dot + 1)...]) {
            return true
        }
        // `name-<hash>.ext`: the hash may itself contain `-` or `_`, so also try the last 8 bytes.
        if let dash = stem.lastIndex(of: UInt8(ascii: "-")), dash > stem.startIndex,
           looksLikeHash(stem[(dash + 1)...]) {
            return true
        }
        if stem.count > 9, stem[stem.endIndex - 9] == UInt8(ascii: "-"),
           looksLikeHash(stem[(stem.endIndex - 8)...]) {
            return true
        }
        return false
    }

    private static func looksLikeHash(_ part: ArraySlice<UInt8>) -> Bool {
        guard part.count >= 8, part.count <= 128 else { return false }
        var digit = false, upper = false, lower = false
        for byte in part {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = true
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): upper = true
            case UInt8(ascii: "a")...UInt8(ascii: "z"): lower = true
            case UInt8(ascii: "-"), UInt8(ascii: "_"): continue
            default: return false
            }
        }
        return digit || (upper && lower)
    }
}
