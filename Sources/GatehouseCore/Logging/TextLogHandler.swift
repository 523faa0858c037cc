import GatehouseEncoding
import Logging

/// A swift-log backend writing human-readable single lines:
/// `2025-03-01T12:34:56.789Z info gatehouse: login completed session.id=abc path="/a b"`.
///
/// Control characters in the message and values are escaped (`\n`, `\u{1b}`), so one event is
/// always exactly one line.
public typealias TextLogHandler = LineLogHandler<TextLogFormat>

public enum TextLogFormat: LogLineFormat {
    public static var accessLogFormat: AccessLogFormat { .text }

    public static func render(_ event: LogEvent, label: String, timestamp: String,
                              metadata: Logger.Metadata, provider: Logger.MetadataProvider?) -> String {
        var line = "\(timestamp) \(event.level.rawValue) \(TextEscaping.controlEscaped(label)): \(TextEscaping.controlEscaped(event.message.description))"
        if let error = event.error { line += " error=" + Self.word(String(describing: error)) }
        let merged = LogMetadata.merge(handler: metadata, provider: provider, event: event.metadata)
        for (key, value) in LogMetadata.flatten(merged) {
            line += " \(TextEscaping.controlEscaped(key))=\(Self.render(value))"
        }
        return line + "\n"
    }

    private static func render(_ value: LogMetadata.Flat) -> String {
        switch value {
        case .string(let s): word(s)
        case .array(let items): "[" + items.map(render).joined(separator: ",") + "]"
        case .object(let pairs): "{" + pairs.map { "\(TextEscaping.controlEscaped($0.0))=\(render($0.1))" }.joined(separator: ",") + "}"
        }
    }

    /// Bare when it is a plain word, quoted otherwise.
    static func word(_ s: String) -> String {
        let plain = !s.isEmpty && s.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "=" }
        return plain ? s : "\"" + TextEscaping.controlEscaped(s, escapingQuotes: true) + "\""
    }

}
