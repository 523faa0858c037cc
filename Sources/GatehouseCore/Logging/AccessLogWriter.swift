import GatehouseEncoding

/// Writes one event loop's access-log lines: rendered into a buffer of its own (`AccessLogLine`)
/// and, when buffering, written once at the end of the loop's turn (`flush`, from the server's
/// end-of-batch hook) or when 64 KiB wait: one `write(2)` for all the requests a turn answered,
/// whole lines only, as nginx's `access_log … buffer=` does, but never held past the turn.
/// Not buffering (an observer not tied to a loop), each line is written at once.
///
/// Confined to its loop, as the observer that owns it.
public final class AccessLogWriter: @unchecked Sendable {
    private let format: AccessLogFormat
    private let escapedLabel: [UInt8]
    private let output: LogOutput
    /// nil: the wall clock, its second formatted once (`LogTimestamp.Seconds`).
    private let customTimestamp: (@Sendable () -> String)?
    private let buffering: Bool
    private var buffer: [UInt8] = []
    private var seconds = LogTimestamp.Seconds()

    /// Lines waiting past this many bytes are written without waiting for the turn's end.
    static let flushBytes = 64 * 1024

    init(format: AccessLogFormat, label: String, output: LogOutput, customTimestamp: (@Sendable () -> String)?,
         buffering: Bool) {
        self.format = format
        escapedLabel = Array((format == .json ? JSONString.quoted(label) : TextEscaping.controlEscaped(label)).utf8)
        self.output = output
        self.customTimestamp = customTimestamp
        self.buffering = buffering
    }

    public func write(_ line: AccessLogLine) {
        line.append(to: &buffer, format: format, escapedLabel: escapedLabel) { out in
            if let customTimestamp {
                out.append(contentsOf: customTimestamp().utf8)
            } else {
                seconds.appendNow(to: &out)
            }
        }
        if !buffering || buffer.count >= Self.flushBytes { flush() }
    }

    /// Writes the lines waiting, if any.
    public func flush() {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { output.write(lines: $0) }
        buffer.removeAll(keepingCapacity: buffer.capacity <= 4 * Self.flushBytes)
    }
}

/// A log handler that can hand out an `AccessLogWriter` writing what it would write.
public protocol AccessLogWriting {
    /// nil when the handler would add fields the writer does not know (handler metadata, a
    /// metadata provider) or does not log at `info`.
    func accessLogWriter(buffering: Bool) -> AccessLogWriter?
}
