import Logging

/// A swift-log backend writing human-readable single lines:
/// `2025-03-01T12:34:56.789Z info gatehouse: login completed session.id=abc path="/a b"`.
///
/// Control characters in the message and values are escaped (`\n`, `\u{1b}`), so one event is
/// always exactly one line.
public typealias TextLogHandler = LineLogHandler<TextLogFormat>

public enum TextLogFormat: LogLineFormat {
    public static func render(_ event: LogEvent, label: String, timestamp: String,
                              metadata: Logger.Metadata, provider: Logger.MetadataProvider?) -> String {
        var line = "\(timestamp) \(event.level.rawValue) \(Self.escape(label)): \(Self.escape(event.message.description))"
        if let error = event.error { line += " error=" + Self.word(String(describing: error)) }
        let merged = LogMetadata.merge(handler: metadata, provider: provider, event: event.metadata)
        for (key, value) in LogMetadata.flatten(merged) {
            line += " \(Self.escape(key))=\(Self.render(value))"
        }
        return line + "\n"
    }

    private static func render(_ value: LogMetadata.Flat) -> String {
        switch value {
        case .string(let s): word(s)
        case .array(let items): "[" + items.map(render).joined(separator: ",") + "]"
        case .object(let pairs): "{" + pairs.map { "\(escape($0.0))=\(render($0.1))" }.joined(separator: ",") + "}"
        }
    }

    /// Bare when it is a plain word, quoted otherwise.
    private static func word(_ s: String) -> String {
        let plain = !s.isEmpty && s.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "=" }
        return plain ? s : "\"" + escape(s).replacingAll("\"", with: "\\\"") + "\""
    }

    /// Escapes backslashes and control characters (C0, DEL, C1 and the Unicode line separators).
    static func escape(_ s: String) -> String {
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                let v = scalar.value
                if v < 0x20 || v == 0x7F || (v >= 0x80 && v < 0xA0) || v == 0x2028 || v == 0x2029 {
                    out += "\\u{" + String(v, radix: 16) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
