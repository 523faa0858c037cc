import Testing
@testable import GatehouseCore

/// `GATEHOUSE_CPU_AFFINITY`: `auto` (each event loop on a CPU of its own) unless set to `off`.
@Suite struct CPUAffinityConfigurationTests {
    private func load(_ extra: [String: String]) -> Result<GatehouseConfiguration, ConfigurationErrors> {
        loadMinimalConfiguration(extra)
    }

    @Test func autoByDefault() throws {
        #expect(try load([:]).get().cpuAffinity == .auto)
        #expect(GatehouseConfiguration.variables.contains { $0.name == "GATEHOUSE_CPU_AFFINITY" && $0.default == "auto" })
        #expect(GatehouseConfiguration.unknownVariables(in: ["GATEHOUSE_CPU_AFFINITY": "off"]).isEmpty)
    }

    @Test(arguments: [("off", CPUAffinityPolicy.off), ("OFF", .off), ("auto", .auto)])
    func parsed(text: String, policy: CPUAffinityPolicy) throws {
        #expect(try load(["GATEHOUSE_CPU_AFFINITY": text]).get().cpuAffinity == policy)
    }

    @Test(arguments: ["on", "0-1", "true"])
    func otherValuesStopStartup(text: String) {
        guard case .failure(let errors) = load(["GATEHOUSE_CPU_AFFINITY": text]) else {
            Issue.record("\(text) accepted")
            return
        }
        #expect(errors.issues.contains { $0.variable == "GATEHOUSE_CPU_AFFINITY" && $0.message.contains("auto or off") })
    }
}
