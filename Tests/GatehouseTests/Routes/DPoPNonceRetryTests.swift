import GatehouseOIDC
import HTTP1
import HTTPClient
import Testing
@testable import Gatehouse

/// A DPoP call's second chance at an upstream that wants a new nonce (RFC 9449 §9).
@Suite("DPoP: the upstream's nonce retry")
struct DPoPNonceRetryTests {
    private static let url = "http://api.example:8080/v1/items"

    private func retry(bodiless: Bool = true, nonces: DPoPNonces = DPoPNonces()) -> DPoPNonceRetry {
        DPoPNonceRetry(origin: "http://api.example:8080", nonces: nonces, resend: { nonce in
            UpstreamRequest(host: "api.example", port: 8080, method: "GET", target: "/v1/items?n=" + nonce, headers: HTTPHeaders())
        }, bodiless: bodiless)
    }

    private func head(_ status: Int, _ fields: [(String, String)]) -> HTTPResponseHead {
        var headers = HTTPHeaders()
        for (name, value) in fields { headers.add(name, value) }
        return HTTPResponseHead(status: status, headers: headers)
    }

    @Test("401 use_dpop_nonce with a nonce: sent again with it, and the nonce is remembered")
    func asks() {
        let nonces = DPoPNonces()
        let again = retry(nonces: nonces).retry(after: head(401, [("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#),
                                                                  ("DPoP-Nonce", "n-2")]))
        #expect(again?.target == "/v1/items?n=n-2")
        #expect(nonces.nonce(for: Self.url) == "n-2")
    }

    @Test("A nonce on a success is remembered but nothing is sent again; a bare 401 is relayed")
    func noRetry() {
        let nonces = DPoPNonces()
        #expect(retry(nonces: nonces).retry(after: head(200, [("DPoP-Nonce", "n-3")])) == nil)
        #expect(nonces.nonce(for: Self.url) == "n-3")
        #expect(retry().retry(after: head(401, [("WWW-Authenticate", #"DPoP error="invalid_token""#)])) == nil)
        #expect(retry().retry(after: head(401, [("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#)])) == nil)
    }

    @Test("A call whose body was streamed is never sent twice; its nonce is still kept")
    func bodied() {
        let nonces = DPoPNonces()
        let again = retry(bodiless: false, nonces: nonces)
            .retry(after: head(401, [("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#), ("DPoP-Nonce", "n-4")]))
        #expect(again == nil)
        #expect(nonces.nonce(for: Self.url) == "n-4")
    }
}
