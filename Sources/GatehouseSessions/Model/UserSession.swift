import GatehouseEncoding

/// One of a user's sessions as "my sessions" lists it (`GET /sessions`): its public handle and what
/// the user recognises it by. `idHash` stays in the gateway (it marks the current session).
public struct UserSession: Sendable, Equatable {
    /// A random public id, never the cookie nor its hash.
    public var handle: String
    public var createdAt: Int64
    public var lastSeenAt: Int64
    /// The browser's `User-Agent` as recorded at login, if it sent one.
    public var userAgent: String?
    public var idHash: String

    public init(handle: String, createdAt: Int64, lastSeenAt: Int64, userAgent: String?, idHash: String) {
        (self.handle, self.createdAt, self.lastSeenAt, self.userAgent, self.idHash) = (handle, createdAt, lastSeenAt, userAgent, idHash)
    }

    /// A new session's handle: 128 random bits, base64url.
    public static func newHandle() -> String { Base64URL.encode(RandomBytes.system(16)) }

    /// A handle as a client may send it: 1–64 of base64url's and hex's characters; anything else
    /// names no session and is refused before any look-up.
    public static func isWellFormedHandle(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    /// The longest `User-Agent` kept (a browser's is ~150 bytes; more is noise or an attack on the table).
    public static let userAgentLimit = 256

    /// `value` cut to `userAgentLimit` bytes at a character boundary, control characters removed.
    public static func recordedUserAgent(_ value: String?) -> String? {
        guard let value else { return nil }
        var out = ""
        for scalar in value.unicodeScalars where scalar.value >= 0x20 && scalar.value != 0x7F {
            if out.utf8.count + String(scalar).utf8.count > userAgentLimit { break }
            out.unicodeScalars.append(scalar)
        }
        return out.isEmpty ? nil : out
    }
}
