import Testing
@testable import GatehouseCore

/// `GATEHOUSE_WEBSOCKET_IDLE`: a duration like the others, default 10 minutes, listed in `--help`.
@Suite struct WebSocketConfigurationTests {
    private func load(_ extra: [String: String]) -> Result<GatehouseConfiguration, ConfigurationErrors> {
        loadMinimalConfiguration(extra)
    }

    @Test func defaultIsTenMinutes() throws {
        #expect(try load([:]).get().websocketIdle == 600)
    }

    @Test(arguments: [("90s", 90), ("30m", 1800), ("2h", 7200), ("45", 45)])
    func parsedLikeOtherDurations(text: String, seconds: Int) throws {
        #expect(try load(["GATEHOUSE_WEBSOCKET_IDLE": text]).get().websocketIdle == seconds)
    }

    @Test(arguments: ["0", "soon", "-5s", "10x"])
    func refusedValuesNameTheVariable(text: String) {
        guard case .failure(let errors) = load(["GATEHOUSE_WEBSOCKET_IDLE": text]) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(errors.issues.contains { $0.variable == "GATEHOUSE_WEBSOCKET_IDLE" })
    }

    @Test func listedForHelp() {
        #expect(GatehouseConfiguration.variables.contains { $0.name == "GATEHOUSE_WEBSOCKET_IDLE" && $0.default == "10m" })
        #expect(GatehouseConfiguration.unknownVariables(in: ["GATEHOUSE_WEBSOCKET_IDLE": "1m"]).isEmpty)
    }
}
