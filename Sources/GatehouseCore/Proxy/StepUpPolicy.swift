import GatehouseEncoding

/// Step-up per route (SPEC "Sessions the SPA controls"): route options `acr=A|B` and
/// `max_age=SECONDS`. A session satisfies the route when its ID token's `acr` is one of the listed
/// values and its `auth_time` is no older than `max_age` (OpenID Connect Core §2, §3.1.2.1);
/// otherwise the SPA is told how to sign in again (`step_up_required`, with the `/login` to use).
public struct StepUpPolicy: Sendable, Hashable, CustomStringConvertible {
    /// The acceptable `acr` values; empty for any.
    public var acrValues: [String]
    /// The longest time since the user authenticated, seconds; nil for any.
    public var maxAge: Int?

    public init(acrValues: [String] = [], maxAge: Int? = nil) {
        self.acrValues = acrValues
        self.maxAge = maxAge
    }

    /// Seconds by which the provider's clock may differ from ours in `max_age`'s reckoning (the
    /// ID token's own skew allowance).
    public static let authTimeSkew: Int64 = 5

    /// Why an authentication falls short of the policy; its description names the failing claim.
    public enum Shortfall: Sendable, Equatable, CustomStringConvertible {
        case acrMissing
        case acrNotRequested
        case authTimeMissing
        case authTimeTooOld

        public var description: String {
            switch self {
            case .acrMissing: "acr missing"
            case .acrNotRequested: "acr not requested"
            case .authTimeMissing: "auth_time missing"
            case .authTimeTooOld: "auth_time older than max_age"
            }
        }
    }

    /// What keeps a session whose ID token said `acr` and `authTime` from this policy at `now`, or
    /// nil when it satisfies it. The one rule of the callback (a step-up login's ID token) and of the
    /// route (each request), so a login the callback accepts is never refused by its route at once.
    /// A missing `acr` satisfies no `acr=` list; a missing `auth_time` satisfies no `max_age=`; an
    /// `auth_time` up to `authTimeSkew` seconds past `max_age` does (clocks differ a little).
    public func shortfall(acr: String?, authTime: Int64?, now: Int64) -> Shortfall? {
        if !acrValues.isEmpty {
            guard let acr else { return .acrMissing }
            guard acrValues.contains(acr) else { return .acrNotRequested }
        }
        if let maxAge {
            guard let authTime else { return .authTimeMissing }
            guard now - authTime <= Int64(maxAge) + Self.authTimeSkew else { return .authTimeTooOld }
        }
        return nil
    }

    /// Whether a session whose ID token said `acr` and `authTime` may use the route at `now`.
    public func isSatisfied(acr: String?, authTime: Int64?, now: Int64) -> Bool {
        shortfall(acr: acr, authTime: authTime, now: now) == nil
    }

    /// The `acr_values` parameter: the values, space-separated (OIDC Core §3.1.2.1).
    public var acrValuesParameter: String { acrValues.joined(separator: " ") }

    /// The `/login` that asks the provider for what this route needs.
    public var loginPath: String {
        let query = authorizationParameters
        return "/login" + (query.isEmpty ? "" : "?" + PercentEncoding.query(query))
    }

    public var description: String {
        (acrValues.isEmpty ? "" : ";acr=" + acrValues.joined(separator: "|")) + (maxAge.map { ";max_age=\($0)" } ?? "")
    }

    /// An `acr` value as a route option or `/login` may carry it: visible ASCII without spaces,
    /// `|`, `;` or `,` (the route syntax's separators), at most 200 bytes.
    public static func isValidACR(_ value: Substring) -> Bool {
        !value.isEmpty && value.utf8.count <= 200 && value.utf8.allSatisfy { byte in
            byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "|") && byte != UInt8(ascii: ";") && byte != UInt8(ascii: ",")
        }
    }

    /// `max_age`'s largest value: ten years, far beyond any session lifetime.
    public static let maximumMaxAge = 315_360_000
}

extension StepUpPolicy {
    /// What `/login?acr_values=…&max_age=…` asks for (the `login` link of a `step_up_required`
    /// answer): nil when neither is given.
    /// - Throws: `InvalidLoginRequest` for a repeated, empty or malformed value.
    public static func requested(acrValues: [String?], maxAge: [String?]) throws(InvalidLoginRequest) -> StepUpPolicy? {
        guard acrValues.count <= 1, maxAge.count <= 1 else { throw InvalidLoginRequest() }
        var policy = StepUpPolicy()
        if let given = acrValues.first {
            let values = (given ?? "").split(separator: " ")
            guard !values.isEmpty, values.count <= 10, values.allSatisfy(isValidACR) else { throw InvalidLoginRequest() }
            policy.acrValues = values.map(String.init)
        }
        if let given = maxAge.first {
            guard let text = given, let seconds = Int(text), seconds >= 0, seconds <= maximumMaxAge else { throw InvalidLoginRequest() }
            policy.maxAge = seconds
        }
        return policy.acrValues.isEmpty && policy.maxAge == nil ? nil : policy
    }

    /// The authorization request's parameters for this policy (OIDC Core §3.1.2.1).
    public var authorizationParameters: [(String, String)] {
        var out: [(String, String)] = []
        if !acrValues.isEmpty { out.append(("acr_values", acrValuesParameter)) }
        if let maxAge { out.append(("max_age", String(maxAge))) }
        return out
    }

    public struct InvalidLoginRequest: Error, Sendable {}
}
