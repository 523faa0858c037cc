import GatehouseEncoding

/// Guards that keep the development provider on the local machine: it has fixed test users and no
/// real authentication, so it must never be reachable from another host.
public enum DevProviderSecurity {
    /// True for `localhost`, `127.0.0.0/8` and `::1` (with or without brackets); see `LoopbackHost`,
    /// the one loopback rule of the gateway. Everything else, including `0.0.0.0` and IPv4-mapped
    /// `::ffff:127.0.0.1`, is refused.
    ///
    /// For example: `DevProviderSecurity.isLoopback(host: "127.0.0.1")` is true.
    public static func isLoopback(host: String) -> Bool {
        LoopbackHost.contains(host)
    }
}
