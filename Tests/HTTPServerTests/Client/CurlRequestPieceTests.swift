@testable import HTTPClient
import HTTP1
import Testing

@Suite("libcurl head collector")
struct CurlHeadCollectorTests {
    private func feed(_ lines: [String]) -> (CurlHeadCollector, completedAt: Int?) {
        var collector = CurlHeadCollector()
        var completedAt: Int? = nil
        for (index, line) in lines.enumerated() {
            let done = Array(line.utf8).withUnsafeBytes { collector.consume($0) }
            if done { completedAt = index }
        }
        return (collector, completedAt)
    }

    @Test func finalHeadAfterInterimOnes() {
        let (collector, completedAt) = feed([
            "HTTP/1.1 100 Continue\r\n", "\r\n",
            "HTTP/1.1 103 Early Hints\r\n", "Link: </a.css>; rel=preload\r\n", "\r\n",
            "HTTP/1.1 201 Created\r\n", "Content-Type: application/json\r\n", "X-Two: a\r\n", "X-Two: b\r\n", "\r\n",
            "Trailer-Field: ignored\r\n", "\r\n",
        ])
        #expect(completedAt == 9)
        let head = collector.head
        #expect(head?.status == 201)
        #expect(head?.headers["Content-Type"] == "application/json")
        #expect(head?.headers.values("X-Two") == ["a", "b"])
        #expect(head?.headers.contains("Link") == false)
        #expect(head?.headers.contains("Trailer-Field") == false)
    }

    @Test func foldedValuesAndOddLines() {
        let (collector, _) = feed([
            "HTTP/1.1 200 OK\r\n", "X-Folded: one\r\n", "  two\r\n", ": no name\r\n", "garbage\r\n",
            "X-Empty:\r\n", "\r\n",
        ])
        #expect(collector.head?.headers["X-Folded"] == "one two")
        #expect(collector.head?.headers["X-Empty"] == "")
        #expect(collector.head?.headers.count == 2)
    }

    @Test func statusLineMustHaveThreeDigits() {
        #expect(feed(["HTTP/1.1 2x0 OK\r\n", "\r\n"]).0.head == nil)
        #expect(feed(["HTTP/1.1 20\r\n", "\r\n"]).0.head == nil)
        #expect(feed(["HTTP/2 204\r\n", "\r\n"]).0.head?.status == 204)
        #expect(feed(["\r\n"]).0.head == nil)
    }
}

@Suite("libcurl request plan")
struct CurlRequestPlanTests {
    private func request(_ method: String, headers: HTTPHeaders) -> UpstreamRequest {
        UpstreamRequest(host: "::1", port: 8443, method: method, target: "/a/b?c=%20", headers: headers)
    }

    @Test func framingAndManagedHeaders() {
        let plan = CurlRequestPlan(request("PUT", headers: ["Host": "evil", "Content-Length": "5", "Transfer-Encoding": "chunked",
                                                           "Expect": "100-continue", "X-Kept": "yes", "X-Empty": ""]),
                                   bodyLength: 5, hasBody: true)
        #expect(plan.url == "https://[::1]:8443/a/b?c=%20")
        #expect(plan.upload == .length(5))
        #expect(plan.headerLines == ["X-Kept: yes", "X-Empty;", "Expect:", "Accept:"])
    }

    @Test func uploadModes() {
        #expect(CurlRequestPlan(request("POST", headers: [:]), bodyLength: nil, hasBody: true).upload == .chunked)
        #expect(CurlRequestPlan(request("POST", headers: [:]), bodyLength: 0, hasBody: false).upload == .length(0))
        #expect(CurlRequestPlan(request("GET", headers: [:]), bodyLength: 0, hasBody: false).upload == .none)
        #expect(CurlRequestPlan(request("DELETE", headers: [:]), bodyLength: 0, hasBody: false).upload == .none)
    }

    @Test func acceptKeptWhenSentAndControlCharactersDropped() {
        let plan = CurlRequestPlan(request("GET", headers: HTTPHeaders([("Accept", "text/plain"), ("X-Bad", "a\r\nInjected: 1"),
                                                                       ("X-Nul", "a\u{0}b")])),
                                   bodyLength: 0, hasBody: false)
        #expect(plan.headerLines == ["Accept: text/plain", "Expect:"])
    }
}
