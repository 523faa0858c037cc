import FoundationEssentials
import Gatehouse
import GatehouseConfigFile
import GatehouseCore
import Logging
import Synchronization

/// `serve`'s reloads (SIGHUP, or the file changed): the file read and validated in full, then
/// handed to the runtime, which switches only when every new or changed provider answers. An
/// invalid file keeps the running configuration; the error is logged with its line and counted.
final class ConfigurationReloader: Sendable {
    let runtime: GatewayRuntime
    /// The file, when the configuration has one (without one there is nothing to reload).
    let path: String?
    private let explicitPath: String?
    private let logger: Logger
    /// The file's bytes last loaded: a change event that changed nothing reloads nothing.
    private let lastText = Mutex<[UInt8]?>(nil)

    init(runtime: GatewayRuntime, file: String?, loaded: ConfigurationSource.Loaded, logger: Logger) {
        self.runtime = runtime
        explicitPath = file
        path = ConfigurationSource(path: file, environment: ProcessInfo.processInfo.environment).path
        self.logger = logger
        if let path { lastText.withLock { $0 = FileManager.default.contents(atPath: path).map { Array($0) } } }
    }

    func reload(because reason: String) async {
        guard let path else {
            logger.notice("reload asked, but there is no configuration file (GATEHOUSE_CONFIG): nothing to reload",
                          metadata: ["reason": "\(reason)"])
            return
        }
        let text = FileManager.default.contents(atPath: path).map { Array($0) }
        if reason != "SIGHUP", text != nil, lastText.withLock({ $0 == text }) { return }
        let source = ConfigurationSource(path: explicitPath, environment: ProcessInfo.processInfo.environment)
        switch source.load(requireSecretKey: true) {
        case .failure(let errors):
            runtime.context.metrics.configReloaded(ok: false)
            logger.error("configuration reload failed; the running configuration stays",
                         metadata: ["file": "\(path)", "reason": "\(reason)", "error": "\(errors.description)"])
        case .success(let loaded):
            switch await runtime.reload(to: loaded.configuration) {
            case .switched(let needRestart):
                lastText.withLock { $0 = text }
                logger.info("configuration reloaded", metadata: ["file": "\(path)", "reason": "\(reason)"])
                if !needRestart.isEmpty {
                    logger.warning("configuration reload: these settings take effect only after a restart; their running values are kept",
                                   metadata: ["variables": "\(needRestart.joined(separator: ", "))"])
                }
            case .refused(let why):
                logger.error("configuration reload refused; the running configuration stays",
                             metadata: ["file": "\(path)", "reason": "\(reason)", "error": "\(why)"])
            }
        }
    }
}
