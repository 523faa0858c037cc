import GatehouseEncoding

/// One problem in the environment: the variable and what is wrong with it.
///
/// `description` reads `GATEHOUSE_SESSION_IDLE: "5x" is not a duration (…)`. Values of secret
/// variables are never echoed.
public struct ConfigurationIssue: Sendable, Equatable, CustomStringConvertible {
    public var variable: String
    public var message: String

    public init(variable: String, message: String) {
        self.variable = variable
        self.message = message
    }

    public var description: String { "\(variable): \(message)" }

    /// Quotes an operator-supplied value for a message: control characters escaped (no terminal
    /// or log injection), long values shortened.
    public static func quote(_ value: some StringProtocol) -> String {
        "\"" + TextEscaping.controlEscaped(value, escapingQuotes: true, limit: 120) + "\""
    }
}

/// Every configuration problem found at once, so an operator fixes them in one round.
public struct ConfigurationErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var issues: [ConfigurationIssue]

    public init(issues: [ConfigurationIssue]) { self.issues = issues }

    /// One issue a line.
    public var description: String { issues.map(\.description).joined(separator: "\n") }
}
