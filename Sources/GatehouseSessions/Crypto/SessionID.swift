import GatehouseEncoding
/// The opaque session identifier that is the session cookie's value.
///
/// 32 bytes (256 bits) from the system CSPRNG, base64url without padding: 43 characters. The
/// database stores only `hash` (hex SHA-256 of the cookie value), so a leaked database does not
/// let anyone present a valid cookie.
///
/// For example:
/// ```swift
/// let id = SessionID.generate()
/// setCookie(value: id.cookieValue); try store.createSession(.init(idHash: id.hash, …), replacing: old)
/// ```
///
/// `description` never shows the value, so logging a `SessionID` by mistake leaks nothing usable.
public struct SessionID: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// Number of random bytes in a session id.
    public static let byteCount = 32
    /// Length of the cookie value: 32 bytes in unpadded base64url.
    public static let cookieValueLength = 43

    /// The cookie value. Secret: never log it.
    public let cookieValue: String
    /// Lowercase hex SHA-256 of `cookieValue`: the `sessions.id_hash` key.
    public let hash: String

    private init(validatedCookieValue: String) {
        self.cookieValue = validatedCookieValue
        self.hash = SecretHash.hex(of: validatedCookieValue)
    }

    /// A new random session id: `getrandom(2)`, in one call (`RandomBytes.system`).
    public static func generate() -> SessionID {
        SessionID(validatedCookieValue: Base64URL.encode(RandomBytes.system(byteCount)))
    }

    /// Accepts a cookie value only if it has the shape `generate()` produces: exactly 43
    /// base64url characters encoding 32 bytes canonically. Anything else (hostile or stale
    /// cookies) is nil before it is hashed or looked up.
    public init?(cookieValue: String) {
        let utf8 = Array(cookieValue.utf8)
        guard utf8.count == Self.cookieValueLength,
              let decoded = Base64URL.decode(utf8), decoded.count == Self.byteCount else { return nil }
        self.init(validatedCookieValue: cookieValue)
    }

    /// The first 8 hex characters of `hash`, as `gatehouse sessions list` shows it.
    public var hashPrefix: String { String(hash.prefix(8)) }

    public var description: String { "SessionID(hash: \(hashPrefix)…)" }

    public var customMirror: Mirror { Mirror(self, children: ["hash": hash], displayStyle: .struct) }
}
