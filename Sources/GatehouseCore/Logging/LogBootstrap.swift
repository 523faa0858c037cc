import Logging

/// Installs Gatehouse's log backend. Call once, from the executable's `main` (swift-log allows a
/// single bootstrap per process); libraries and tests take a `Logger` instead.
public enum LogBootstrap {
    public static func bootstrap(level: Logger.Level, format: LogFormat, output: LogOutput = .standardError) {
        LoggingSystem.bootstrap({ label, provider in
            makeHandler(label: label, level: level, format: format, output: output, metadataProvider: provider)
        }, metadataProvider: nil)
    }

    /// A handler for `label` without touching the global logging system (tests, sub-loggers).
    public static func makeHandler(label: String, level: Logger.Level, format: LogFormat,
                                   output: LogOutput = .standardError,
                                   metadataProvider: Logger.MetadataProvider? = nil) -> any LogHandler {
        switch format {
        case .json: JSONLogHandler(label: label, level: level, output: output, metadataProvider: metadataProvider)
        case .text: TextLogHandler(label: label, level: level, output: output, metadataProvider: metadataProvider)
        }
    }
}
