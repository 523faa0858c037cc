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
    /// Set for a file descriptor: whole lines written as bytes, several at once.
    private let descriptor: FileDescriptorWriter?

    /// A custom sink (tests). It must be thread-safe; ``collecting()`` is.
    public init(_ sink: @escaping @Sendable (String) -> Void) {
        self.sink = sink
        descriptor = nil
    }

    private init(descriptor: FileDescriptorWriter) {
        self.descriptor = descriptor
        sink = { descriptor.write($0) }
    }

    public func write(_ line: String) { sink(line) }

    /// Whole lines, each ending in `\n` (`AccessLogWriter`'s buffer): one write for all of them
    /// to a file descriptor; line by line to a custom sink.
    public func write(lines: UnsafeRawBufferPointer) {
        if let descriptor { return descriptor.write(lines) }
        var start = 0
        for (index, byte) in lines.enumerated() where byte == UInt8(ascii: "\n") {
            sink(String(decoding: UnsafeRawBufferPointer(rebasing: lines[start...index]), as: UTF8.self))
            start = index + 1
        }
    }

    /// Standard error, one `write(2)` per line (or per batch of access lines) under a lock.
    public static let standardError = LogOutput(descriptor: FileDescriptorWriter.standardError)

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
        var line = line
        line.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    func write(_ bytes: UnsafeRawBufferPointer) {
        guard var base = bytes.baseAddress else { return }
        var left = bytes.count
        lock.withLock { _ in
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
