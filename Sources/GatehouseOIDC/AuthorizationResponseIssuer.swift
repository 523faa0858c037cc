/// The `iss` parameter of the authorization response (RFC 9207 §2.4), a mix-up defence.
public enum AuthorizationResponseIssuer {
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// The provider advertises `authorization_response_iss_parameter_supported` but sent no `iss`.
        case missing
        /// `iss` is not the configured issuer (compared exactly, RFC 9207 §2.4).
        case mismatch(expected: String, actual: String)

        public var description: String {
            switch self {
            case .missing: "the authorization response lacks iss although the provider advertises it (RFC 9207)"
            case .mismatch(let expected, let actual): "the authorization response iss \"\(actual)\" is not the issuer \"\(expected)\""
            }
        }
    }

    /// Checks the callback's `iss`: when present it must equal `expected`; it is required when the
    /// provider advertises `authorization_response_iss_parameter_supported` (`required`).
    static func check(_ iss: String?, expected: String, required: Bool) throws(Problem) {
        guard let iss else {
            if required { throw .missing }
            return
        }
        guard iss == expected else { throw .mismatch(expected: expected, actual: iss) }
    }
}
