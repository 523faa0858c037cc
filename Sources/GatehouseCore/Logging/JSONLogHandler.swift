import Logging

/// A swift-log backend writing one JSON object a line:
/// `{"ts":"2025-03-01T12:34:56.789Z","level":"info","msg":"login completed","label":"gatehouse","session.id":"…"}`.
///
/// Metadata keys are flattened with dots; every string is JSON-escaped, so a message or value
/// carrying newlines cannot forge extra log lines. Metadata keys that would collide with the
/// fixed fields (`ts`, `level`, `msg`, `label`, `error`) are written as `metadata.<key>`.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public let label: String
    private let output: LogOutput
    private let timestamp: @Sendable () -> String

    static let reservedKeys: Set<String> = ["ts", "level", "msg", "label", "error"]

    public init(label: String, level: Logger.Level = .info, output: LogOutput = .standardError,
                metadataProvider: Logger.MetadataProvider? = nil,
                timestamp: @escaping @Sendable () -> String = LogTimestamp.now) {
        self.label = label
        self.logLevel = level
        self.output = output
        self.metadataProvider = metadataProvider
        self.timestamp = timestamp
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
        var line = "{\"ts\":"
        line += JSONString.quoted(timestamp())
        line += ",\"level\":" + JSONString.quoted(event.level.rawValue)
        line += ",\"msg\":" + JSONString.quoted(event.message.description)
        line += ",\"label\":" + JSONString.quoted(label)
        if let error = event.error {
            line += ",\"error\":" + JSONString.quoted(String(describing: error))
        }
        let merged = LogMetadata.merge(handler: metadata, provider: metadataProvider, event: event.metadata)
        for (key, value) in LogMetadata.flatten(merged) {
            let name = Self.reservedKeys.contains(key) ? "metadata.\(key)" : key
            line += "," + JSONString.quoted(name) + ":"
            Self.append(value, to: &line)
        }
        line += "}\n"
        return line
    }

    private static func append(_ value: LogMetadata.Flat, to line: inout String) {
        switch value {
        case .string(let s): line += JSONString.quoted(s)
        case .array(let items):
            line += "["
            for (i, item) in items.enumerated() {
                if i > 0 { line += "," }
                append(item, to: &line)
            }
            line += "]"
        case .object(let pairs):
            line += "{"
            for (i, (k, v)) in pairs.enumerated() {
                if i > 0 { line += "," }
                line += JSONString.quoted(k) + ":"
                append(v, to: &line)
            }
            line += "}"
        }
    }
}
