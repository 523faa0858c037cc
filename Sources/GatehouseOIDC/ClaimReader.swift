import FoundationEssentials

/// A claim that is absent or has the wrong JSON type.
enum ClaimProblem: Error, Sendable {
    case missing(String)
    case invalid(String, reason: String)
}

/// Typed access to a verified token's claims (RFC 7519 §4.1).
struct ClaimReader {
    let claims: [String: JSONValue]

    func requiredString(_ name: String) throws(ClaimProblem) -> String { try required(name, optionalString) }

    func requiredDate(_ name: String) throws(ClaimProblem) -> Date { try required(name, optionalDate) }

    private func required<Value>(_ name: String, _ read: (String) throws(ClaimProblem) -> Value?) throws(ClaimProblem) -> Value {
        guard let value = try read(name) else { throw .missing(name) }
        return value
    }

    /// Absent or `null` is `nil`; an empty string counts as absent.
    func optionalString(_ name: String) throws(ClaimProblem) -> String? {
        switch claims[name] {
        case nil, .null?: return nil
        case .string(let value)?: return value.isEmpty ? nil : value
        default: throw .invalid(name, reason: "is not a string")
        }
    }

    /// A NumericDate: a JSON number of seconds since the epoch.
    func optionalDate(_ name: String) throws(ClaimProblem) -> Date? {
        switch claims[name] {
        case nil, .null?: return nil
        case .number(let seconds)? where seconds.isFinite && abs(seconds) < 1e11:
            return Date(timeIntervalSince1970: seconds)
        default: throw .invalid(name, reason: "is not a NumericDate")
        }
    }

    /// `aud`: one string or an array of strings (RFC 7519 §4.1.3).
    func audiences() throws(ClaimProblem) -> [String] {
        switch claims["aud"] {
        case nil, .null?: throw .missing("aud")
        case .string(let value)?: return [value]
        case .array(let values)?:
            let strings = values.compactMap(\.stringValue)
            guard strings.count == values.count, !strings.isEmpty else {
                throw .invalid("aud", reason: "is not a string or a non-empty array of strings")
            }
            return strings
        default: throw .invalid("aud", reason: "is not a string or an array of strings")
        }
    }
}

/// The clock-skew tolerance actually applied: the configured value bounded to 0…300 s, so a
/// typo cannot make expired tokens acceptable for hours.
enum ClockSkew {
    static let maximum: TimeInterval = 300

    static func bounded(_ skew: TimeInterval) -> TimeInterval {
        guard skew.isFinite else { return 60 }
        return min(max(skew, 0), maximum)
    }
}
