#if canImport(Glibc)
import Glibc
#endif

/// A source of random bytes, injected so tests can be deterministic.
///
/// ``system`` is `getentropy(3)` (`getrandom(2)`): the kernel CSPRNG, as RFC 7636 §7.1 and RFC 9700
/// §2.1 ask for verifiers, `state` and `nonce`.
public struct RandomBytes: Sendable {
    private let generate: @Sendable (Int) -> [UInt8]

    public init(_ generate: @escaping @Sendable (Int) -> [UInt8]) {
        self.generate = generate
    }

    /// The operating system's CSPRNG, in one system call per value of up to 256 bytes (getentropy's
    /// limit): `SystemRandomNumberGenerator` makes one per 8 bytes (a login made 52).
    public static let system = RandomBytes { count in
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        #if canImport(Glibc)
        bytes.withUnsafeMutableBytes { buffer in
            while filled < count {
                let chunk = min(256, count - filled)
                guard getentropy(buffer.baseAddress! + filled, chunk) == 0 else { break }
                filled += chunk
            }
        }
        #endif
        // If getentropy failed (no getrandom: not a kernel Gatehouse runs on): the standard library's.
        var generator = SystemRandomNumberGenerator()
        while filled < count {
            bytes[filled] = generator.next()
            filled += 1
        }
        return bytes
    }

    /// `count` bytes. A source that returns fewer is padded from the system CSPRNG, so a faulty
    /// test double can never shorten a secret.
    public func callAsFunction(_ count: Int) -> [UInt8] {
        let count = max(0, count)
        var bytes = Array(generate(count).prefix(count))
        if bytes.count < count { bytes += RandomBytes.system(count - bytes.count) }
        return bytes
    }
}

/// Opaque random values for `state`, `nonce` and similar one-time secrets.
public enum RandomToken {
    /// The minimum entropy: 128 bits (RFC 9700 §4.7.1 / OIDC Core §15.5.2 "sufficient entropy").
    public static let minimumBytes = 16

    /// A base64url string of `bytes` random bytes (at least ``minimumBytes``).
    ///
    /// For example: `RandomToken.make()` is 43 characters carrying 256 bits.
    public static func make(bytes: Int = 32, random: RandomBytes = .system) -> String {
        Base64URL.encode(random(max(bytes, minimumBytes)))
    }
}
