import Crypto
import Foundation
@testable import Gatehouse
import GatehouseCore
import GatehouseEncoding
import GatehouseOIDC
import HTTP1
import Synchronization
import Testing

/// The ACME client's protocol (RFC 8555) against a scripted CA: JWS shapes, nonces, the order's
/// steps, and the CA's refusals.
@Suite("ACME client")
struct ACMEClientTests {
    /// A CA in memory: answers each request by its URL, records the JWS it got.
    final class ScriptedCA: @unchecked Sendable {
        let lock = Mutex(())
        var requests: [(url: String, protected: [String: JSONValue], payload: [UInt8])] = []
        var nonces = 0
        /// Nonces to refuse with badNonce (counted down).
        var refuseNonces = 0
        var authorizationPolls = 0
        var challengeStatus = "valid"
        let chain = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

        func nonce() -> String {
            nonces += 1
            return "nonce-\(nonces)"
        }

        func answer(_ method: String, _ url: String, _ body: [UInt8]?) -> ACMEResponse {
            lock.withLock { _ in
                var headers = HTTPHeaders()
                headers.add("Replay-Nonce", nonce())
                func json(_ status: Int, _ text: String, location: String? = nil) -> ACMEResponse {
                    if let location { headers.add("Location", location) }
                    return ACMEResponse(status: status, headers: headers, body: Array(text.utf8))
                }
                if url == "https://ca.test/dir" {
                    return json(200, #"{"newNonce":"https://ca.test/nonce","newAccount":"https://ca.test/account","newOrder":"https://ca.test/order"}"#)
                }
                if url == "https://ca.test/nonce" { return json(200, "") }
                let jws = (try? JSONValue.parse(body ?? []))?.objectValue ?? [:]
                let protected = Base64URL.decode(jws["protected"]?.stringValue ?? "").flatMap { try? JSONValue.parse($0) }?.objectValue ?? [:]
                let payload = Base64URL.decode(jws["payload"]?.stringValue ?? "") ?? []
                requests.append((url, protected, payload))
                if refuseNonces > 0 {
                    refuseNonces -= 1
                    return json(400, #"{"type":"urn:ietf:params:acme:error:badNonce","detail":"stale"}"#)
                }
                switch url {
                case "https://ca.test/account":
                    return json(201, #"{"status":"valid"}"#, location: "https://ca.test/acct/7")
                case "https://ca.test/order":
                    return json(201, #"{"status":"pending","authorizations":["https://ca.test/authz/1"],"finalize":"https://ca.test/finalize"}"#,
                                location: "https://ca.test/order/1")
                case "https://ca.test/authz/1":
                    authorizationPolls += 1
                    let status = authorizationPolls > 1 ? challengeStatus : "pending"
                    let error = status == "invalid" ? #","error":{"type":"urn:ietf:params:acme:error:connection","detail":"refused"}"# : ""
                    return json(200, #"{"status":"\#(status)","identifier":{"type":"dns","value":"gatehouse.test"},"challenges":[{"type":"dns-01","url":"https://ca.test/chall/dns","token":"dnsTokenDnsTokenDnsToken1"},{"type":"http-01","url":"https://ca.test/chall/1","token":"httpTokenHttpTokenHttp01","status":"pending"\#(error)}]}"#)
                case "https://ca.test/chall/1":
                    return json(200, #"{"status":"processing"}"#)
                case "https://ca.test/finalize":
                    return json(200, #"{"status":"processing","finalize":"https://ca.test/finalize"}"#)
                case "https://ca.test/order/1":
                    return json(200, #"{"status":"valid","certificate":"https://ca.test/cert/1"}"#)
                case "https://ca.test/cert/1":
                    return ACMEResponse(status: 200, headers: headers, body: Array(chain.utf8))
                default:
                    return json(404, #"{"type":"urn:ietf:params:acme:error:malformed","detail":"no such resource"}"#)
                }
            }
        }

        var exchange: ACMEExchange { { method, url, body in self.answer(method, url, body) } }
    }

    func client(_ ca: ScriptedCA, key: ACMEAccountKey = ACMEAccountKey()) -> ACMEClient {
        ACMEClient(directoryURL: "https://ca.test/dir", key: key, accountURL: nil, exchange: ca.exchange, pause: { _ in })
    }

    @Test("an order: account with jwk, then kid; http-01 told to go; CSR for the names; the chain downloaded")
    func wholeOrder() throws {
        let ca = ScriptedCA()
        let key = ACMEAccountKey()
        let acme = client(ca, key: key)
        #expect(try acme.ensureAccount(email: "ops@example.com") == "https://ca.test/acct/7")
        let issued = try acme.order(domains: ["gatehouse.test"])
        #expect(String(decoding: issued.chainPEM, as: UTF8.self) == ca.chain)
        #expect(String(decoding: issued.keyPEM, as: UTF8.self).contains("PRIVATE KEY"))

        let account = try #require(ca.requests.first)
        #expect(account.protected["jwk"] != nil && account.protected["kid"] == nil)
        #expect(account.protected["alg"]?.stringValue == "ES256")
        let accountPayload = try JSONValue.parse(account.payload).objectValue ?? [:]
        #expect(accountPayload["termsOfServiceAgreed"]?.boolValue == true)
        #expect(accountPayload["contact"] == .array([.string("mailto:ops@example.com")]))
        for later in ca.requests.dropFirst() {
            #expect(later.protected["kid"]?.stringValue == "https://ca.test/acct/7" && later.protected["jwk"] == nil)
            #expect(later.protected["url"]?.stringValue == later.url)
        }
        // Each nonce used once.
        let used = ca.requests.compactMap { $0.protected["nonce"]?.stringValue }
        #expect(Set(used).count == used.count)
        // The challenge POST carries `{}`; POST-as-GET an empty payload.
        #expect(ca.requests.first { $0.url == "https://ca.test/chall/1" }?.payload == Array("{}".utf8))
        #expect(ca.requests.first { $0.url == "https://ca.test/cert/1" }?.payload == [])
        let finalize = try #require(ca.requests.first { $0.url == "https://ca.test/finalize" })
        #expect(try JSONValue.parse(finalize.payload).objectValue?["csr"]?.stringValue.flatMap { Base64URL.decode($0) }?.isEmpty == false)
    }

    @Test("a badNonce refusal is retried with the nonce it brought; five in a row give up")
    func badNonce() throws {
        let ca = ScriptedCA()
        ca.refuseNonces = 2
        #expect(try client(ca).ensureAccount(email: nil) == "https://ca.test/acct/7")
        #expect(ca.requests.count == 3)
        let again = ScriptedCA()
        again.refuseNonces = ACMEClient.nonceAttempts
        #expect { try client(again).ensureAccount(email: nil) } throws: { ($0 as? ACMEError)?.isBadNonce == true }
    }

    @Test("an invalid authorization fails the order with the CA's reason")
    func invalidAuthorization() throws {
        let ca = ScriptedCA()
        ca.challengeStatus = "invalid"
        let acme = client(ca)
        _ = try acme.ensureAccount(email: nil)
        #expect { try acme.order(domains: ["gatehouse.test"]) } throws: { error in
            guard case .invalid(let why) = error as? ACMEError else { return false }
            return why.contains("gatehouse.test") && why.contains("connection: refused")
        }
    }

    @Test("the key authorization is the token and the RFC 7638 thumbprint; the JWS verifies with the account key")
    func thumbprintAndSignature() throws {
        let key = ACMEAccountKey()
        let point = Array(key.key.publicKey.rawRepresentation)
        let jwk = "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"\(Base64URL.encode(point[0..<32]))\",\"y\":\"\(Base64URL.encode(point[32...]))\"}"
        #expect(key.thumbprint == Base64URL.encode(SHA256.hash(data: Array(jwk.utf8))))
        #expect(key.keyAuthorization(token: "abc") == "abc." + key.thumbprint)
        let body = try key.signed(payload: Array("{}".utf8), url: "https://ca.test/x", nonce: "n1", accountURL: "https://ca.test/acct/1")
        let jws = try #require(try JSONValue.parse(body).objectValue)
        let signingInput = (jws["protected"]?.stringValue ?? "") + "." + (jws["payload"]?.stringValue ?? "")
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(jws["signature"]?.stringValue ?? "")))
        #expect(key.key.publicKey.isValidSignature(signature, for: Array(signingInput.utf8)))
        #expect(ACMEAccountKey(raw: key.raw)?.thumbprint == key.thumbprint)
    }

    @Test("answers are framed by length or chunks; problems become typed errors")
    func framing() throws {
        let chunked = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nReplay-Nonce: n\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n".utf8)
        let parsed = try ACMEHTTP.parse(chunked, method: "POST")
        #expect(parsed.status == 200 && parsed.body == Array("abcde".utf8) && parsed.headers["Replay-Nonce"] == "n")
        let sized = try ACMEHTTP.parse(Array("HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}trailing".utf8), method: "POST")
        #expect(sized.body == Array("{}".utf8))
        #expect(throws: ACMEError.self) { try ACMEHTTP.parse(Array("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort".utf8), method: "GET") }
        #expect(throws: ACMEError.self) { try ACMEHTTP.parse(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab".utf8), method: "GET") }
        let problem = ACMEResponse(status: 403, headers: HTTPHeaders(),
                                   body: Array(#"{"type":"urn:ietf:params:acme:error:unauthorized","detail":"no"}"#.utf8))
        #expect(throws: ACMEError.problem(status: 403, type: "urn:ietf:params:acme:error:unauthorized", detail: "no")) {
            try ACMEClient.checked(problem)
        }
    }

    @Test("the stored state: round trip, renewal at two thirds of the lifetime, back-off from 30 s to an hour")
    func state() {
        var state = ACMEState(accountKey: [1, 2, 3])
        state.accountURL = "https://ca.test/acct/7"
        #expect(state.needsOrder(now: 0))
        #expect(ACMEState(decoding: state.encoded) == state)
        state.chainPEM = Array("chain".utf8)
        state.keyPEM = Array("key".utf8)
        state.issuedAt = 1_000
        state.notAfter = 1_000 + 90 * 86_400
        #expect(ACMEState(decoding: state.encoded) == state)
        let twoThirds: Int64 = 1_000 + 60 * 86_400
        #expect(state.renewalTime == .some(twoThirds))
        #expect(!state.needsOrder(now: 1_000 + 60 * 86_400 - 1))
        #expect(state.needsOrder(now: 1_000 + 60 * 86_400))
        #expect((1...9).map(ACMEState.backoff(failures:)) == [30, 60, 120, 240, 480, 960, 1920, 3600, 3600])
        #expect(ACMEState(decoding: Array("{}".utf8)) == nil)
    }

    @Test("challenge answers: base64url tokens of 22 to 256 characters, with the known thumbprint only")
    func challengeAnswers() {
        let answers = ACMEChallengeAnswers()
        #expect(answers.keyAuthorization(for: "httpTokenHttpTokenHttp01") == nil)
        answers.thumbprint = "thumb"
        #expect(answers.keyAuthorization(for: "httpTokenHttpTokenHttp01") == "httpTokenHttpTokenHttp01.thumb")
        #expect(answers.keyAuthorization(for: "short") == nil)
        #expect(answers.keyAuthorization(for: "httpTokenHttpToken/../x") == nil)
        #expect(answers.keyAuthorization(for: Substring(String(repeating: "a", count: 257))) == nil)
    }
}
