#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Where log lines go. Each `write` is one complete line (with its `\n`); writes are serialized,
/// so lines from different threads never interleave.
public struct LogOutput: Sendable {
    private let sink: @Sendable (String) -> Void

    /// A custom sink (tests). It must be thread-safe; ``collecting()`` is.
    public init(_ sink: @escaping @Sendable (String) -> Void) { self.sink = sink }

    public func write(_ line: String) { sink(line) }

    /// Standard error, one `write(2)` per line under a lock.
    public static let standardError = LogOutput { line in
        FileDescriptorWriter.standardError.write(line)
    }

    /// An in-memory sink and a way to read what was written (for tests).
    public static func collecting() -> (output: LogOutput, lines: @Sendable () -> [String]) {
        let store = LineStore()
        return (LogOutput { store.append($0) }, { store.lines })
    }
}

private final class LineStore: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ line: String) { storage.withLock { $0.append(line) } }
    var lines: [String] { storage.withLock { $0 } }
}

private final class FileDescriptorWriter: Sendable {
    static let standardError = FileDescriptorWriter(fd: 2)
    private let fd: Int32
    private let lock = Mutex<Void>(())

    init(fd: Int32) { self.fd = fd }

    func write(_ line: String) {
        var bytes = Array(line.utf8)
        lock.withLock { _ in
            bytes.withUnsafeMutableBytes { raw in
                guard var base = raw.baseAddress else { return }
                var left = raw.count
                while left > 0 {
                    #if canImport(Darwin)
                    let n = Darwin.write(fd, base, left)
                    #elseif canImport(Glibc)
                    let n = Glibc.write(fd, base, left)
                    #else
                    let n = Musl.write(fd, base, left)
                    #endif
                    if n < 0 {
                        if errno == EINTR { continue }
                        return  // stderr gone: nothing sensible left to do with a log line
                    }
                    left -= n
                    base += n
                }
            }
        }
    }
}
