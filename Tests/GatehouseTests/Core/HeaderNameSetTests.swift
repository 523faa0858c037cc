import Gatehouse
import HTTP1
import Testing
@testable import GatehouseCore

@Suite("Header name sets and single-pass header checks")
struct HeaderNameSetTests {
    @Test("membership ignores ASCII case only, and length decides the candidates")
    func membership() {
        let set = HeaderNameSet(["connection", "te", "x-forwarded-for"])
        #expect(set.contains("Connection"))
        #expect(set.contains("TE"))
        #expect(set.contains("X-Forwarded-For"[...]))
        #expect(!set.contains("Connections"))
        #expect(!set.contains("t"))
        #expect(!set.contains(""))
        #expect(!set.contains("connectıon"))  // dotless ı: not ASCII, never folded
        #expect(!set.contains(String(repeating: "x", count: 500)))
        let bigger = set.union(["Set-Cookie"])
        #expect(bigger.contains("set-cookie") && bigger.contains("te"))
        #expect(!set.contains("set-cookie"))
    }

    @Test("names listed in Connection are dropped both ways; close and hop-by-hop cost no set")
    func connectionNames() {
        #expect(ProxyHeaderPolicy.namedInConnection(["Connection": "keep-alive, close, TE"], keeping: nil) == nil)
        let named = ProxyHeaderPolicy.namedInConnection(["Connection": "close, X-Private"], keeping: "content-length")
        #expect(named?.contains("x-private") == true)
        let kept = ProxyHeaderPolicy.namedInConnection(["Connection": "Content-Length"], keeping: "content-length")
        #expect(kept == nil)
        #expect(ProxyHeaderPolicy.namedInConnection(["Connection": "Keep-Alive, CLOSE, upgrade,te"], keeping: nil) == nil)
        let several = ProxyHeaderPolicy.namedInConnection(HTTPHeaders([("Connection", "x-a, closed"), ("connection", " X-B ")]),
                                                          keeping: "x-a")
        #expect(several?.contains("closed") == true && several?.contains("x-b") == true && several?.contains("x-a") == false)
        let down = ProxyHeaderPolicy.downstreamResponseHeaders(from: HTTPHeaders([("Connection", "X-Private"),
                                                                                  ("X-Private", "1"), ("X-Public", "2")]))
        #expect(down.fields == [HTTPField(name: "X-Public", value: "2")])
    }

    @Test("the relay's one pass (fields noted as they are kept) adds what two passes over the kept fields add")
    func securityHeadersNotedWhileKept() {
        let upstreams: [HTTPHeaders] = [
            ["Content-Type": "text/html", "Server": "x"],
            HTTPHeaders([("Content-Type", "application/json"), ("Content-Type", "text/html")]),
            HTTPHeaders([("Connection", "Content-Type, X-Frame-Options"), ("Content-Type", "text/html"),
                         ("X-Frame-Options", "SAMEORIGIN"), ("Referrer-Policy", "origin")]),
            HTTPHeaders([("x-content-type-options", "nosniff"), ("content-security-policy", "default-src 'none'"),
                         ("CONTENT-TYPE", "Text/Html"), ("Strict-Transport-Security", "max-age=5"), ("Set-Cookie", "a=1")]),
            HTTPHeaders(),
        ]
        for upstream in upstreams {
            for hsts in [nil, "max-age=31536000"] as [String?] {
                var twoPasses = ProxyHeaderPolicy.downstreamResponseHeaders(from: upstream)
                SecurityHeaders.apply(to: &twoPasses, html: SecurityHeaders.isHTML(twoPasses), strictTransportSecurity: hsts)
                var present = SecurityHeaders.Present()
                var onePass = ProxyHeaderPolicy.downstreamResponseHeaders(from: upstream, noting: &present)
                SecurityHeaders.apply(to: &onePass, present: present, strictTransportSecurity: hsts)
                #expect(onePass == twoPasses, "\(upstream.fields)")
            }
        }
    }

    @Test("security headers: added once, kept when present, CSP only on HTML of any case")
    func securityHeaders() {
        var html: HTTPHeaders = ["Content-Type": "TEXT/HTML; charset=utf-8", "x-frame-options": "SAMEORIGIN"]
        SecurityHeaders.apply(to: &html, html: SecurityHeaders.isHTML(html))
        #expect(html.values("X-Frame-Options").count == 1 && html["X-Frame-Options"] == "SAMEORIGIN")
        #expect(html["Content-Security-Policy"] == SecurityHeaders.contentSecurityPolicy)
        #expect(html["Referrer-Policy"] == "no-referrer" && html["X-Content-Type-Options"] == "nosniff")
        let before = html
        SecurityHeaders.apply(to: &html, html: true)
        #expect(html == before)
        var json: HTTPHeaders = ["Content-Type": "application/json"]
        SecurityHeaders.apply(to: &json, html: SecurityHeaders.isHTML(json))
        #expect(!json.contains("Content-Security-Policy"))
        #expect(!SecurityHeaders.isHTML(["Content-Type": "text/htm"]))
        #expect(!SecurityHeaders.isHTML(HTTPHeaders()))
        #expect(SecurityHeaders.isHTML(["content-type": "TEXT/Html; charset=utf-8"]))
        #expect(!SecurityHeaders.isHTML(["Content-Type": "text/plain"]) && !SecurityHeaders.isHTML(["Content-Type": "t\u{e9}xt/html"]))
    }

    @Test("CSRF header: exactly one field whose trimmed value is 1")
    func csrf() {
        #expect(CSRFPolicy.check(["x-csrf": " 1\t"], headerName: "X-CSRF"))
        #expect(!CSRFPolicy.check(HTTPHeaders([("X-CSRF", "1"), ("X-CSRF", "1")]), headerName: "X-CSRF"))
        #expect(!CSRFPolicy.check(["X-CSRF": "11"], headerName: "X-CSRF"))
        #expect(!CSRFPolicy.check(["X-CSRF": ""], headerName: "X-CSRF"))
        #expect(CSRFPolicy.check(["X-CSRF": "1"], headerName: "X-CSRF") && CSRFPolicy.check(["X-CSRF": "\t 1 "], headerName: "X-CSRF"))
        for refused in ["1 1", " ", "true", "1,1", "01", "1\u{301}", "\u{661}", "l"] {
            #expect(!CSRFPolicy.check(["X-CSRF": refused], headerName: "X-CSRF"), "\(refused)")
        }
        #expect(!CSRFPolicy.check(HTTPHeaders(), headerName: "X-CSRF"))
    }

    @Test("cookies: every same-named value in order across headers, quotes removed, early stop")
    func cookies() {
        let headers = HTTPHeaders([("Cookie", "a=1; gh=\"first\" ;junk; gh = second"), ("cookie", "gh=third;")])
        #expect(CookieParser.values(named: "gh", in: headers) == ["first", "second", "third"])
        var firstOnly: [String] = []
        CookieParser.forEachValue(named: "gh", in: headers) { firstOnly.append(String($0)); return false }
        #expect(firstOnly == ["first"])
        #expect(CookieParser.values(named: "GH", in: headers).isEmpty)
        #expect(CookieParser.values(named: "gh", in: ["Cookie": "gh=é=x; gh=\""]) == ["é=x", "\""])
        // The bytes form finds the same values, and stops where asked.
        for list in [headers, ["Cookie": "gh=é=x; gh=\""], ["Cookie": "x=1"], HTTPHeaders()] as [HTTPHeaders] {
            var bytes: [String] = []
            CookieParser.forEachValueBytes(named: "gh", in: list) { bytes.append(String(decoding: $0, as: UTF8.self)); return true }
            #expect(bytes == CookieParser.values(named: "gh", in: list))
        }
        var firstBytes: [String] = []
        CookieParser.forEachValueBytes(named: "gh", in: headers) { firstBytes.append(String(decoding: $0, as: UTF8.self)); return false }
        #expect(firstBytes == ["first"])
    }
}
