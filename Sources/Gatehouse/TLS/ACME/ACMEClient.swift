import Crypto
import GatehouseEncoding
import GatehouseOIDC
import TLSTransport

/// One conversation with an ACME server (RFC 8555): the directory, nonces, the account, and an
/// order through http-01 validation to the issued chain. Confined to the thread that drives it;
/// every call blocks on the network (`ACMEExchange`).
final class ACMEClient {
    /// How names are proved (RFC 8555 §8.3, RFC 8737).
    enum Challenge {
        /// Answered by every instance's redirect listener (`ACMEChallengeAnswers`).
        case http01
        /// A certificate shown on the HTTPS port to validators asking for `acme-tls/1`: published
        /// with the name and the key authorization's SHA-256 for the time of the validation.
        case tlsALPN01(publish: (String, [UInt8]) throws -> Void, withdraw: (String) -> Void)

        var type: String {
            if case .http01 = self { return "http-01" }
            return "tls-alpn-01"
        }
    }

    let directoryURL: String
    let key: ACMEAccountKey
    /// The account's URL (`kid`), once created or found.
    var accountURL: String?
    private let exchange: ACMEExchange
    private let pause: (Double) -> Void
    private var directory: [String: JSONValue] = [:]
    private var nonce: String?

    /// Polls of an authorization or an order before giving up (at about a second each, more when the
    /// server says so in `Retry-After`).
    static let maximumPolls = 120
    /// Tries of one request refused for its nonce (a CA may refuse valid nonces now and then).
    static let nonceAttempts = 5

    private let challenge: Challenge

    init(directoryURL: String, key: ACMEAccountKey, accountURL: String?, exchange: @escaping ACMEExchange,
         challenge: Challenge = .http01, pause: @escaping (Double) -> Void) {
        self.challenge = challenge
        self.directoryURL = directoryURL
        self.key = key
        self.accountURL = accountURL
        self.exchange = exchange
        self.pause = pause
    }

    /// The account for this key: created (terms agreed) or, when it exists, found (§7.3).
    func ensureAccount(email: String?) throws(ACMEError) -> String {
        if let accountURL { return accountURL }
        var payload: [String: JSONValue] = ["termsOfServiceAgreed": .bool(true)]
        if let email { payload["contact"] = .array([.string("mailto:" + email)]) }
        let response = try post(try resource("newAccount"), payload: payload, asAccount: false)
        guard response.status == 201 || response.status == 200, let location = response.headers["Location"] else {
            throw .protocolError("newAccount answered \(response.status) without the account's URL")
        }
        accountURL = location
        return location
    }

    /// Orders a certificate for `domains`: each authorization proved over http-01, a new key and
    /// CSR, the order finalized and the chain downloaded.
    func order(domains: [String]) throws(ACMEError) -> (chainPEM: [UInt8], keyPEM: [UInt8]) {
        let identifiers = JSONValue.array(domains.map { .object(["type": .string("dns"), "value": .string($0)]) })
        let created = try post(try resource("newOrder"), payload: ["identifiers": identifiers])
        guard created.status == 201, let orderURL = created.headers["Location"] else {
            throw .protocolError("newOrder answered \(created.status) without the order's URL")
        }
        var order = try object(created)
        for case .string(let url) in order["authorizations"]?.arrayValue ?? [] {
            try authorize(url)
        }
        guard let csr = CertificateSigningRequest(names: domains) else { throw .protocolError("cannot make a certificate request") }
        guard let finalize = order["finalize"]?.stringValue else { throw .protocolError("the order has no finalize URL") }
        order = try object(try post(finalize, payload: ["csr": .string(Base64URL.encode(csr.der))]))
        order = try poll(orderURL, until: order, what: "the order")
        guard let certificateURL = order["certificate"]?.stringValue else { throw .protocolError("the valid order names no certificate") }
        let chain = try post(certificateURL, payload: nil)
        guard chain.status == 200, chain.body.starts(with: Array("-----BEGIN CERTIFICATE-----".utf8)) else {
            throw .protocolError("the certificate download answered \(chain.status)")
        }
        return (chain.body, csr.keyPEM)
    }

    /// Proves one name. http-01: the answer is already served (`ACMEChallengeAnswers` knows this
    /// account's thumbprint), so the challenge is only told to go; tls-alpn-01: its certificate is
    /// shown for the time of the validation.
    private func authorize(_ url: String) throws(ACMEError) {
        let authorization = try object(try post(url, payload: nil))
        if authorization["status"]?.stringValue == "valid" { return }
        let name = Self.identifier(authorization)
        let challenges = authorization["challenges"]?.arrayValue?.compactMap(\.objectValue) ?? []
        guard let offered = challenges.first(where: { $0["type"]?.stringValue == challenge.type }),
              let token = offered["token"]?.stringValue, let challengeURL = offered["url"]?.stringValue,
              !token.isEmpty, token.utf8.allSatisfy(Self.isTokenByte)
        else {
            throw .invalid("the CA offers no usable \(challenge.type) challenge for \(name)")
        }
        if case .tlsALPN01(let publish, let withdraw) = challenge {
            do { try publish(name, Array(SHA256.hash(data: Array(key.keyAuthorization(token: token).utf8)))) } catch {
                throw .invalid("cannot show the tls-alpn-01 certificate for \(name): \(error)")
            }
            defer { withdraw(name) }
            _ = try post(challengeURL, payload: [:])
            _ = try poll(url, until: authorization, what: "the authorization of \(name)")
            return
        }
        _ = try post(challengeURL, payload: [:])
        _ = try poll(url, until: authorization, what: "the authorization of \(Self.identifier(authorization))")
    }

    /// POST-as-GET of `url` until its status is `valid`; `invalid` (or too many polls) fails with
    /// the CA's reason.
    private func poll(_ url: String, until current: [String: JSONValue], what: String) throws(ACMEError) -> [String: JSONValue] {
        var current = current
        for _ in 0..<Self.maximumPolls {
            switch current["status"]?.stringValue {
            case "valid":
                return current
            case "invalid":
                throw .invalid("\(what) is invalid: \(Self.reason(current))")
            default:
                pause(1)
                current = try object(try post(url, payload: nil))
            }
        }
        throw .invalid("\(what) was still \(current["status"]?.stringValue ?? "pending") after \(Self.maximumPolls) polls")
    }

    // MARK: Requests

    /// A signed POST (`payload` nil: POST-as-GET). A `badNonce` refusal is retried with the nonce
    /// it brought (§6.5), up to `nonceAttempts` tries in all.
    private func post(_ url: String, payload: [String: JSONValue]?, asAccount: Bool = true) throws(ACMEError) -> ACMEResponse {
        // Strings, booleans, arrays and objects only: the writer never declines them.
        let bytes = payload.map { JSONValueWriter.sortedKeys($0) ?? Array("{}".utf8) }
        var attempt = 0
        while true {
            attempt += 1
            let body = try key.signed(payload: bytes, url: url, nonce: try freshNonce(), accountURL: asAccount ? accountURL : nil)
            let response = try exchange("POST", url, body)
            nonce = response.headers["Replay-Nonce"]
            do {
                return try Self.checked(response)
            } catch where error.isBadNonce && attempt < Self.nonceAttempts {
                continue
            }
        }
    }

    private func freshNonce() throws(ACMEError) -> String {
        if let nonce {
            self.nonce = nil
            return nonce
        }
        let response = try exchange("HEAD", try resource("newNonce"), nil)
        guard let fresh = response.headers["Replay-Nonce"] else { throw .protocolError("newNonce gave no Replay-Nonce") }
        return fresh
    }

    private func resource(_ name: String) throws(ACMEError) -> String {
        if directory.isEmpty {
            directory = try object(try Self.checked(try exchange("GET", directoryURL, nil)))
        }
        guard let url = directory[name]?.stringValue else { throw .protocolError("the directory has no \(name)") }
        return url
    }

    private func object(_ response: ACMEResponse) throws(ACMEError) -> [String: JSONValue] {
        guard let object = (try? JSONValue.parse(response.body))?.objectValue else {
            throw .protocolError("an answer of \(response.status) is not a JSON object")
        }
        return object
    }

    /// The response, or its problem document as an error.
    static func checked(_ response: ACMEResponse) throws(ACMEError) -> ACMEResponse {
        guard response.status >= 400 else { return response }
        let problem = (try? JSONValue.parse(response.body))?.objectValue ?? [:]
        throw .problem(status: response.status, type: problem["type"]?.stringValue ?? "",
                       detail: String((problem["detail"]?.stringValue ?? "").prefix(300)))
    }

    /// A challenge token is base64url (§8.3): it becomes a path on the redirect listener.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2D || byte == 0x5F
    }

    static func identifier(_ authorization: [String: JSONValue]) -> String {
        authorization["identifier"]?.objectValue?["value"]?.stringValue ?? "?"
    }

    /// The CA's reason for an invalid authorization (its challenge's error) or order.
    static func reason(_ object: [String: JSONValue]) -> String {
        let errors = [object["error"]] + (object["challenges"]?.arrayValue ?? []).map { $0.objectValue?["error"] }
        for case .object(let error)? in errors {
            return String(("\(error["type"]?.stringValue ?? ""): \(error["detail"]?.stringValue ?? "")").prefix(300))
        }
        return "no reason given"
    }
}
