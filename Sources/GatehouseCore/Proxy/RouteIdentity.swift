/// What a route tells its upstream about the signed-in user, beyond forwarding the request: the
/// route options `identity=`, `token=`, `exchange=` with `audience=`, `resource=`, `scope=` (SPEC
/// "Identity for your own APIs").
///
/// For example: `/orders=http://orders:8000;identity=assertion;audience=orders-api` sends a
/// `Gatehouse-Assertion` with `aud` = `orders-api` beside the user's access token;
/// `/graph=https://graph.example;exchange=refresh;resource=https://graph.example` sends a token
/// obtained for that resource instead of the user's own.
public struct RouteIdentity: Sendable, Hashable, CustomStringConvertible {
    /// `identity=`: which identity fields are added.
    public enum Carrier: String, Sendable, Hashable {
        case none, assertion, headers, both
    }

    /// `token=`: what goes in `Authorization`.
    public enum Bearer: String, Sendable, Hashable {
        /// The user's access token (or the exchanged token with `exchange=`).
        case access
        /// The gateway's signed assertion.
        case assertion
        /// No `Authorization` at all.
        case none
    }

    /// `exchange=`: how the token for this API is obtained.
    public enum ExchangeKind: String, Sendable, Hashable {
        /// RFC 8693 token exchange, `subject_token` = the user's access token.
        case token
        /// A refresh-token grant with `resource` (RFC 8707) and/or `scope`.
        case refresh
    }

    public var carrier: Carrier
    /// nil: the option was not given (the user's access token on `auth=user`/`optional`).
    public var bearer: Bearer?
    /// `audience=`: the assertion's `aud` and the exchange's `audience`; nil for the upstream's origin.
    public var audience: String?
    /// `resource=` (RFC 8707): an absolute URI without a fragment.
    public var resource: String?
    /// `scope=`: space-separated, normalized.
    public var scope: String?
    public var exchange: ExchangeKind?
    /// `dpop=off`: the upstream cannot take DPoP; a session whose tokens are bound to a DPoP key is
    /// refused here rather than its token sent as a bearer (it would not work, and must not).
    public var refusesDPoP: Bool

    public init(carrier: Carrier = .none, bearer: Bearer? = nil, audience: String? = nil, resource: String? = nil,
                scope: String? = nil, exchange: ExchangeKind? = nil, refusesDPoP: Bool = false) {
        (self.carrier, self.bearer, self.audience) = (carrier, bearer, audience)
        (self.resource, self.scope, self.exchange) = (resource, scope, exchange)
        self.refusesDPoP = refusesDPoP
    }

    /// Nothing beyond the route's `auth=` policy.
    public static let plain = RouteIdentity()

    public var isPlain: Bool { self == .plain }
    /// The assertion is signed for this route (as a header, as the bearer, or both).
    public var signsAssertion: Bool { carrier == .assertion || carrier == .both || bearer == .assertion }
    public var sendsAssertionHeader: Bool { carrier == .assertion || carrier == .both }
    public var sendsIdentityHeaders: Bool { carrier == .headers || carrier == .both }

    /// The options as written after the upstream URL (none of `auth=`'s).
    public var description: String {
        var out = ""
        if carrier != .none { out += ";identity=\(carrier.rawValue)" }
        if let bearer { out += ";token=\(bearer.rawValue)" }
        if let exchange { out += ";exchange=\(exchange.rawValue)" }
        if let audience { out += ";audience=\(audience)" }
        if let resource { out += ";resource=\(resource)" }
        if let scope { out += ";scope=\(scope)" }
        if refusesDPoP { out += ";dpop=off" }
        return out
    }

    /// RFC 8707 §2: an absolute URI, no fragment; only http(s) is useful here, and no spaces, `;`
    /// or `,` (the route syntax's separators).
    public static func isValidResource(_ text: String) -> Bool {
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ";") && $0 != UInt8(ascii: ",") }),
              !text.contains("#"), let url = try? AbsoluteURL(parsing: text) else { return false }
        return url.fragment == nil && !url.hasUserInfo
    }
}
