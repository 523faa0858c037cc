import Logging

/// How one log event becomes one line of output.
public protocol LogLineFormat: Sendable {
    /// How `AccessLogWriter` writes this format's access lines.
    static var accessLogFormat: AccessLogFormat { get }
    static func render(_ event: LogEvent, label: String, timestamp: String,
                       metadata: Logger.Metadata, provider: Logger.MetadataProvider?) -> String
}

/// A swift-log backend writing one line per event in `Format`, never more: every format escapes
/// control characters, so a message or value cannot forge extra log lines.
public struct LineLogHandler<Format: LogLineFormat>: LogHandler, AccessLogWriting {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public let label: String
    private let output: LogOutput
    /// nil: `LogTimestamp.now` (tests fix the time).
    private let customTimestamp: (@Sendable () -> String)?

    public init(label: String, level: Logger.Level = .info, output: LogOutput = .standardError,
                metadataProvider: Logger.MetadataProvider? = nil,
                timestamp: (@Sendable () -> String)? = nil) {
        self.label = label
        self.logLevel = level
        self.output = output
        self.metadataProvider = metadataProvider
        customTimestamp = timestamp
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        guard event.level >= logLevel else { return }
        output.write(render(event))
    }

    func render(_ event: LogEvent) -> String {
        Format.render(event, label: label, timestamp: customTimestamp?() ?? LogTimestamp.now(), metadata: metadata,
                      provider: metadataProvider)
    }

    public func accessLogWriter(buffering: Bool) -> AccessLogWriter? {
        guard metadata.isEmpty, metadataProvider == nil, logLevel <= .info else { return nil }
        return AccessLogWriter(format: Format.accessLogFormat, label: label, output: output,
                               customTimestamp: customTimestamp, buffering: buffering)
    }
}
