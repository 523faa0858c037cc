import GatehouseSessions

/// A well-formed session cookie value (43 bytes of base64url) as six machine words: the key of the
/// session cache's memo of recent cookie values.
///
/// Hashing a `Substring` key checks whether the text is normalised and feeds it to the hasher
/// through a generic path (about 400 instructions a lookup); six words go to the same seeded
/// hasher whole. Every byte is hashed: the values are whatever clients send (well-formed, but
/// chosen by them), so the seeded hash is what keeps them from piling up in one bucket.
struct SessionCookieKey: Hashable, Sendable {
    private let words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    /// Nil unless `value` is exactly `SessionID.cookieValueLength` (43) bytes long (the six words
    /// hold 48).
    init?(_ value: UnsafeBufferPointer<UInt8>) {
        guard value.count == SessionID.cookieValueLength else { return nil }
        var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(value)) }
        self.words = words
    }

    static func == (a: SessionCookieKey, b: SessionCookieKey) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2
            && a.words.3 == b.words.3 && a.words.4 == b.words.4 && a.words.5 == b.words.5
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
        hasher.combine(words.4)
        hasher.combine(words.5)
    }

    /// The key as one word (its bytes are the cookie's random value), for admission shares.
    var admissionHash: UInt64 { words.0 ^ words.1 ^ words.2 ^ words.3 ^ words.4 ^ words.5 }

    /// A slot of a direct-mapped table of `count` slots (a power of two): every word mixed in by
    /// multiplication with `seed` (odd), the top bits taken.
    func slotIndex(seed: UInt64, count: Int) -> Int {
        var mixed = words.0 &* seed
        mixed = (mixed ^ words.1) &* seed
        mixed = (mixed ^ words.2) &* seed
        mixed = (mixed ^ words.3) &* seed
        mixed = (mixed ^ words.4) &* seed
        mixed = (mixed ^ words.5) &* seed
        mixed ^= mixed >> 29
        return Int(truncatingIfNeeded: mixed) & (count - 1)
    }
}
