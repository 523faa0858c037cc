import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// How much the fuzz tests run and from which seed, shared by all of them.
///
/// `FUZZ_SEED` (decimal or `0x` hex) replays a run; without it every run draws a new seed, so CI keeps
/// exploring. `FUZZ_ITERATIONS` is the total of mutated inputs over the fuzz tests (default 100,000,
/// what `swift test` runs in CI; the sanitizer run in docs/development.md "Fuzzing" uses millions).
/// Every failure message carries the line that reproduces it.
public enum FuzzRun {
    public static let seed: UInt64 = {
        if let text = getenv("FUZZ_SEED").map({ String(cString: $0) }) {
            let value = text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
            if let value { return value }
        }
        return UInt64.random(in: 0...UInt64.max)
    }()

    public static let totalIterations: Int = {
        getenv("FUZZ_ITERATIONS").flatMap { Int(String(cString: $0)) }.map { max(1, $0) } ?? 100_000
    }()

    /// This test's part of the total.
    public static func iterations(share: Double) -> Int { max(1, Int(Double(totalIterations) * share)) }

    /// A generator of its own per test (`stream` tells them apart), all derived from the one seed.
    public static func generator(_ stream: UInt64) -> SplitMix64 { SplitMix64(seed: seed ^ stream) }

    /// Runs a fuzz loop on a thread of its own: millions of iterations (the sanitizer run) must not
    /// hold the cooperative pool, whose threads the server tests running beside need within their
    /// timeouts.
    public static func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue(label: "test.fuzz").async { continuation.resume(returning: body()) }
        }
    }

    public static var reproduce: String {
        "reproduce with: FUZZ_SEED=0x\(String(seed, radix: 16)) FUZZ_ITERATIONS=\(totalIterations) swift test --filter Fuzz"
    }
}

/// Mutations that hit the parser's decisions: line endings, separators, NUL, truncation.
public enum Mutator {
    public static let interesting: [UInt8] = [0x0D, 0x0A, 0x00, 0x20, 0x09, 0x3A, 0x3B, 0x2C, 0x7F, 0xFF, 0x30, 0x61]

    public static func mutate(_ input: [UInt8], using rng: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            switch Int.random(in: 0..<6, using: &rng) {
            case 0 where !bytes.isEmpty:  // flip to any byte
                bytes[Int.random(in: bytes.indices, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 1:  // insert a separator or line ending
                bytes.insert(interesting.randomElement(using: &rng) ?? 0,
                             at: Int.random(in: 0...bytes.count, using: &rng))
            case 2 where !bytes.isEmpty:  // delete
                bytes.remove(at: Int.random(in: bytes.indices, using: &rng))
            case 3 where !bytes.isEmpty:  // truncate
                bytes.removeLast(Int.random(in: 0...bytes.count, using: &rng))
            case 4 where !bytes.isEmpty:  // duplicate a short run (repeated fields, doubled CRLF)
                let start = Int.random(in: bytes.indices, using: &rng)
                let end = min(bytes.count, start + Int.random(in: 1...12, using: &rng))
                bytes.insert(contentsOf: bytes[start..<end], at: end)
            default:  // overwrite with an interesting byte
                if !bytes.isEmpty {
                    bytes[Int.random(in: bytes.indices, using: &rng)] = interesting.randomElement(using: &rng) ?? 0
                }
            }
        }
        return bytes
    }
}
