@testable import GatehouseCore

/// The configuration loaded from a minimal valid environment (an issuer and a client id) plus
/// `extra`, without requiring a secret key: what the configuration suites vary one variable of.
func loadMinimalConfiguration(_ extra: [String: String]) -> Result<GatehouseConfiguration, ConfigurationErrors> {
    var environment = ["GATEHOUSE_ISSUER": "https://idp.example.com", "GATEHOUSE_CLIENT_ID": "spa"]
    for (name, value) in extra { environment[name] = value }
    return GatehouseConfiguration.load(environment: environment, requireSecretKey: false)
}
