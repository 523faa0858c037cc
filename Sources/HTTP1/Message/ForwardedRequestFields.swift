/// The fields of a request a proxy sends on: the received head's fields it passes on, as the bytes
/// they arrived with, then the ones it adds itself (`X-Forwarded-For`, fields fixed by its
/// configuration, `Authorization`, the user's identity fields, `traceparent`), in that order.
///
/// Written straight into the upstream's head (`RequestHeadEncoder`): a proxied request puts no
/// field list together (two arrays, every kept line copied twice) between the browser's head and
/// the upstream's. `headers` makes that list for whoever wants one (tests, the WebSocket handshake).
///
/// A class: the request that carries it is handed down several calls and into closures, and a
/// struct of seven references was copied and destroyed each time (about 400 instructions per
/// proxied request); a reference is retained.
public final class ForwardedRequestFields: Sendable {
    /// The fields of the received head the passed ones are taken from.
    public let received: HTTPHeaders
    /// Bit `i` set: `received`'s field `i` is passed on; nil: every field is (a head of more than
    /// 64 fields is filtered into `received` itself).
    let passed: UInt64?
    /// The value of the `X-Forwarded-For` field added, if any.
    public let forwardedFor: String?
    /// Added as they are (checked once: the proxy's `X-Forwarded-Proto` and `-Host`).
    public let fixed: [HTTPField.Checked]
    /// The value of the `Authorization` field added, if any.
    public let authorization: String?
    /// Fields about the user added after `Authorization` (the gateway's assertion, identity
    /// headers), checked once when they were made.
    public let identity: [HTTPField.Checked]
    /// The `traceparent` field added, if any.
    public let trace: TraceParent?

    /// Every field of `headers`, nothing added.
    public convenience init(passing headers: HTTPHeaders) {
        self.init(received: headers, passed: nil, forwardedFor: nil, fixed: [], authorization: nil, trace: nil)
    }

    /// The fields of `received` that `passed` has the bit of (nil: all), then the added ones.
    public init(received: HTTPHeaders, passed: UInt64?, forwardedFor: String?, fixed: [HTTPField.Checked],
                authorization: String?, identity: [HTTPField.Checked] = [], trace: TraceParent?) {
        self.identity = identity
        precondition(passed == nil || received.count <= 64, "a field mask covers 64 fields")
        self.received = received
        self.passed = passed
        self.forwardedFor = forwardedFor
        self.fixed = fixed
        self.authorization = authorization
        self.trace = trace
    }

    /// The same fields as a list, in the order they are written.
    public var headers: HTTPHeaders {
        var out = HTTPHeaders(minimumCapacity: received.count + fixed.count + 3, bytes: encodedSize)
        let passed = passed
        out.append(fieldsOf: received) { index, _, _ in passed.map { ($0 >> UInt64(index)) & 1 == 1 } ?? true }
        if let forwardedFor { out.add("X-Forwarded-For", forwardedFor) }
        for field in fixed { out.add(field) }
        if let authorization { out.add("Authorization", authorization) }
        for field in identity { out.add(field) }
        if let trace { out.add(trace) }
        return out
    }
}
