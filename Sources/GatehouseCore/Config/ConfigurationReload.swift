/// What a configuration reload may change (SPEC "A configuration file, reloaded without a
/// restart"): everything a request reads (routes, rules, providers, cookies, headers, CORS) is
/// taken from the new file; what the running process was built around (its sockets, its database
/// and key, its threads, pools and logging) keeps the value it started with, and each such key
/// that changed is named so the operator knows a restart is needed.
public enum ConfigurationReload {
    /// `new` with every restart-only setting put back to `running`'s, and the variables of those
    /// that differed.
    public static func applying(_ new: GatehouseConfiguration, over running: GatehouseConfiguration)
        -> (configuration: GatehouseConfiguration, needRestart: [String]) {
        var kept = new
        var needRestart: [String] = []
        func keep<Value: Equatable>(_ path: WritableKeyPath<GatehouseConfiguration, Value>, _ variable: String) {
            guard kept[keyPath: path] != running[keyPath: path] else { return }
            kept[keyPath: path] = running[keyPath: path]
            needRestart.append(variable)
        }
        keep(\.listen, "GATEHOUSE_LISTEN")
        keep(\.metricsListen, "GATEHOUSE_METRICS_LISTEN")
        // The certificate files themselves are re-read when they change, without a reload.
        keep(\.listenerTLS, "GATEHOUSE_TLS_CERT")
        keep(\.databasePath, "GATEHOUSE_DATABASE")
        keep(\.secretKey, "GATEHOUSE_SECRET_KEY")
        keep(\.previousSecretKey, "GATEHOUSE_SECRET_KEY_PREVIOUS")
        keep(\.clientEncryptionKeyPEMs, "GATEHOUSE_CLIENT_ENCRYPTION_KEY")
        // The server's and the pools' own settings, fixed when they were made.
        keep(\.maxBody, "GATEHOUSE_MAX_BODY")
        keep(\.cpuAffinity, "GATEHOUSE_CPU_AFFINITY")
        keep(\.storeQueue, "GATEHOUSE_STORE_QUEUE")
        keep(\.storeTimeout, "GATEHOUSE_STORE_TIMEOUT")
        keep(\.upstreamTimeout, "GATEHOUSE_UPSTREAM_TIMEOUT")
        keep(\.websocketIdle, "GATEHOUSE_WEBSOCKET_IDLE")
        keep(\.providerTimeout, "GATEHOUSE_PROVIDER_TIMEOUT")
        keep(\.providerMaxInFlight, "GATEHOUSE_PROVIDER_MAX_IN_FLIGHT")
        keep(\.logLevel, "GATEHOUSE_LOG_LEVEL")
        keep(\.logFormat, "GATEHOUSE_LOG_FORMAT")
        return (kept, needRestart)
    }
}
