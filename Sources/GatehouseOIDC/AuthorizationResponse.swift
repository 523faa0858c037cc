import GatehouseEncoding

/// The authorization response at the redirect URI (RFC 6749 §4.1.2, RFC 9207, RFC 9700 §4.7) and
/// its protocol checks, as pure functions: the callback endpoint does the I/O in between (taking
/// the pending login by `state`, fetching the provider metadata) and calls them in this order:
///
/// 1. ``init(parameters:)``: no protocol parameter repeated, `state` present;
/// 2. ``checkBrowserAndOutcome(presentedBindingHashes:pendingBindingHash:)``: the browser that
///    started the login, then the provider's `error`;
/// 3. ``code(expectedIssuer:issuerRequired:)``: `iss` (mix-up defence), then the `code` to exchange.
public struct AuthorizationResponse: Sendable, Equatable {
    /// The `state` value; the caller looks the pending login up by its hash.
    public let state: String
    let code: String?
    let issuer: String?
    let error: String?

    /// Why an authorization response is refused; each case is a reason the operator sees in logs
    /// and metrics.
    public enum Refusal: Error, Sendable, Equatable {
        /// `state`, `code`, `iss` or `error` appeared more than once (RFC 6749 §3.1).
        case repeatedParameter(String)
        case missingState
        /// No login-binding cookie of this browser matches the pending login (RFC 9700 §4.7).
        case wrongBrowser
        /// The provider answered `error=…`; the value is reduced to letters and `_` for logging.
        case providerError(String)
        case issuer(AuthorizationResponseIssuer.Problem)
        case missingCode
    }

    static let protocolParameters = ["state", "code", "iss", "error"]

    /// Reads the response from the callback's query parameters, in order (a nil value is a
    /// malformed escape).
    public init(parameters: [(name: String, value: String?)]) throws(Refusal) {
        func values(_ name: String) -> [String?] { parameters.filter { $0.name == name }.map(\.value) }
        for name in Self.protocolParameters where values(name).count > 1 { throw .repeatedParameter(name) }
        func single(_ name: String) -> String? { values(name).first ?? nil }
        guard let state = single("state"), !state.isEmpty else { throw .missingState }
        self.state = state
        self.code = single("code")
        self.issuer = single("iss")
        self.error = single("error")
    }

    /// The login must finish in the browser that started it; then a provider `error` ends it.
    ///
    /// - Parameters:
    ///   - presentedBindingHashes: the hashes of the browser's login-binding cookie values.
    ///   - pendingBindingHash: the hash stored with the pending login.
    public func checkBrowserAndOutcome(presentedBindingHashes: [String], pendingBindingHash: String) throws(Refusal) {
        guard presentedBindingHashes.contains(where: { ConstantTime.equals($0, pendingBindingHash) }) else {
            throw .wrongBrowser
        }
        if let error {
            throw .providerError(String(error.prefix(64).filter { $0.isLetter || $0 == "_" }))
        }
    }

    /// Checks `iss` (RFC 9207 §2.4: when present it must equal the issuer; required when the
    /// provider advertises it) and returns the authorization code to exchange.
    public func code(expectedIssuer: String, issuerRequired: Bool) throws(Refusal) -> String {
        do {
            try AuthorizationResponseIssuer.check(issuer, expected: expectedIssuer, required: issuerRequired)
        } catch {
            throw .issuer(error)
        }
        guard let code, !code.isEmpty else { throw .missingCode }
        return code
    }
}
