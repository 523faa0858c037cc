import Logging

/// A swift-log backend writing one JSON object a line:
/// `{"ts":"2025-03-01T12:34:56.789Z","level":"info","msg":"login completed","label":"gatehouse","session.id":"…"}`.
///
/// Metadata keys are flattened with dots; every string is JSON-escaped, so a message or value
/// carrying newlines cannot forge extra log lines. Metadata keys that would collide with the
/// fixed fields (`ts`, `level`, `msg`, `label`, `error`) are written as `metadata.<key>`.
public typealias JSONLogHandler = LineLogHandler<JSONLogFormat>

public enum JSONLogFormat: LogLineFormat {
    static let reservedKeys: Set<String> = ["ts", "level", "msg", "label", "error"]
    public static var accessLogFormat: AccessLogFormat { .json }

    public static func render(_ event: LogEvent, label: String, timestamp: String,
                              metadata: Logger.Metadata, provider: Logger.MetadataProvider?) -> String {
        var line = "{\"ts\":"
        line += JSONString.quoted(timestamp)
        line += ",\"level\":" + JSONString.quoted(event.level.rawValue)
        line += ",\"msg\":" + JSONString.quoted(event.message.description)
        line += ",\"label\":" + JSONString.quoted(label)
        if let error = event.error {
            line += ",\"error\":" + JSONString.quoted(String(describing: error))
        }
        let merged = LogMetadata.merge(handler: metadata, provider: provider, event: event.metadata)
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
