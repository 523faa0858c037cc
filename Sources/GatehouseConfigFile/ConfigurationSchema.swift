import GatehouseCore

/// The configuration file's JSON Schema (`docs/gatehouse.schema.json`, `gatehouse schema`), made
/// from the definitions the loader reads: the variables' list, the provider variables, the route
/// options. Editors complete keys from it and flag unknown ones; a test keeps the file in the
/// repository equal to what this makes.
public enum ConfigurationSchema {
    public static func json() -> String {
        let topLevel = FileKeys.topLevelVariables.sorted().map { variable in
            property(FileKeys.key(of: variable), variable: variable)
        }
        let providerKeys = FileKeys.providerVariables.sorted().map { variable in
            property(variable == "GATEHOUSE_PROVIDER" ? "profile" : FileKeys.key(of: variable), variable: variable)
        }
        let routeOptions = RouteOptions.known.filter { $0 != "allow" }.map { option in
            "\"\(option)\": {\"description\": \(JSONString.quoted("Route option \(option)= (docs/configuration.md#route-options)")), "
                + "\"type\": [\"string\", \"number\", \"array\"]}"
        }
        let rule = """
            {"oneOf": [{"type": "string", "description": "CLAIM:VALUE|VALUE terms joined by +"}, \
            {"type": "object", "description": "claim to a value or a list of values; every claim must hold", \
            "additionalProperties": {"type": ["string", "number", "boolean", "array"]}}]}
            """
        let route = """
            {"type": "object", "required": ["prefix", "upstream"], "additionalProperties": false, "properties": {
                  "prefix": {"type": "string", "description": "the path the route serves, e.g. /api"},
                  "upstream": {"type": "string", "description": "the URL it forwards to, e.g. http://api:9000"},
                  "allow": {"description": "who may call the route: a rule, a map of claims, or a list of them (any one admits)", \
            "oneOf": [\(rule), {"type": "array", "items": \(rule)}]},
                  \(routeOptions.joined(separator: ",\n      "))
                }}
            """
        return """
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "$id": "https://github.com/gatehouse/gatehouse/docs/gatehouse.schema.json",
              "title": "Gatehouse configuration file (GATEHOUSE_CONFIG)",
              "description": "Keys are the environment variables' names without GATEHOUSE_, lower-case. Any value may hold ${NAME} (from the environment); a key ending in _file reads its value from that file.",
              "type": "object",
              "additionalProperties": false,
              "patternProperties": {"^[a-z0-9_]+_file$": {"type": "string", "description": "the path of a file holding the value of the key without _file"}},
              "properties": {
                "providers": {"type": "object", "description": "provider name (a-z, 0-9, -) to that provider's keys",
                  "propertyNames": {"pattern": "^[a-z0-9][a-z0-9-]{0,31}$"},
                  "additionalProperties": {"type": "object", "additionalProperties": false,
                    "patternProperties": {"^[a-z0-9_]+_file$": {"type": "string"}},
                    "properties": {
                  \(providerKeys.joined(separator: ",\n      "))
                    }}},
                "routes": {"description": "the API routes, in order", "oneOf": [{"type": "string"}, {"type": "array", "items": \(route)}]},
                \(topLevel.joined(separator: ",\n    "))
              }
            }

            """
    }

    private static func property(_ key: String, variable: String) -> String {
        let described = GatehouseConfiguration.variables.first { $0.name == variable }
        let text = described.map { "\($0.meaning) (default: \($0.default); \(variable))" } ?? variable
        let types = FileKeys.listVariables.contains(variable)
            ? "[\"string\", \"array\"]" : "[\"string\", \"number\", \"boolean\"]"
        return "\"\(key)\": {\"description\": \(JSONString.quoted(text)), \"type\": \(types)}"
    }
}
