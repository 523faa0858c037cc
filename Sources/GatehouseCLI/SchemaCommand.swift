import ArgumentParser
import GatehouseConfigFile

/// `gatehouse schema`: the configuration file's JSON Schema, as `docs/gatehouse.schema.json` holds it.
struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema of the configuration file (GATEHOUSE_CONFIG), for editors.")

    func run() throws {
        print(ConfigurationSchema.json(), terminator: "")
    }
}
