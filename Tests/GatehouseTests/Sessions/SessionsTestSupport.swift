import Foundation
import GatehouseSessions
import Logging

/// A fresh directory under the system temp folder, removed when the test's closure returns.
func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
    let path = NSTemporaryDirectory() + "gatehouse-sessions-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// Deterministic 32-byte keys for sealing tests.
func testKey(_ seed: UInt8) -> [UInt8] {
    (0..<32).map { UInt8(truncatingIfNeeded: Int($0) &* 7 &+ Int(seed)) }
}

func testSealer(_ seed: UInt8 = 1, previous: UInt8? = nil) throws -> TokenSealer {
    try TokenSealer(current: testKey(seed), previous: previous.map(testKey))
}

let quietLogger = Logger(label: "gatehouse.tests.sessions", factory: { _ in SwiftLogNoOpLogHandler() })

/// The bytes of a file, or empty when it does not exist.
func fileBytes(_ path: String) -> [UInt8] {
    (FileManager.default.contents(atPath: path)).map { Array($0) } ?? []
}

func bytes(_ haystack: [UInt8], contain needle: String) -> Bool {
    let pattern = Array(needle.utf8)
    guard !pattern.isEmpty, haystack.count >= pattern.count else { return false }
    for start in 0...(haystack.count - pattern.count) where haystack[start] == pattern[0] {
        if Array(haystack[start..<(start + pattern.count)]) == pattern { return true }
    }
    return false
}

extension NewSession {
    /// A session fixture: created at `now`, idle timeout 1h, lifetime 24h.
    static func make(idHash: String = SessionID.generate().hash, sub: String = "user-1", sid: String? = "sid-1",
                     claims: String = #"{"sub":"user-1","email":"a@example.com"}"#,
                     tokens: TokenSet = .make(), now: Int64 = 1_000_000,
                     idle: Int64 = 3_600, lifetime: Int64 = 86_400) -> NewSession {
        NewSession(idHash: idHash, sub: sub, sid: sid, claims: Array(claims.utf8), tokens: tokens,
                   createdAt: now, idleExpiresAt: now + idle, expiresAt: now + lifetime)
    }
}

extension TokenSet {
    static func make(access: String = "access-1", refresh: String? = "refresh-1", id: String? = "id-token-1",
                     expiresAt: Int64? = 1_000_300) -> TokenSet {
        TokenSet(accessToken: access, refreshToken: refresh, idToken: id, accessTokenExpiresAt: expiresAt,
                 tokenType: "Bearer", scope: "openid profile")
    }
}

extension PendingLogin {
    static func make(state: String = "state-\(UUID().uuidString)", now: Int64 = 1_000_000,
                     verifier: String = "verifier-abc", nonce: String = "nonce-abc",
                     returnTo: String = "/app") -> PendingLogin {
        PendingLogin(stateHash: SecretHash.hex(of: state), bindingHash: SecretHash.hex(of: "binding-" + state),
                     codeVerifier: verifier, nonce: nonce, returnTo: returnTo,
                     createdAt: now, expiresAt: now + 600)
    }
}
