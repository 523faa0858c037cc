import HTTP1
import Testing
@testable import Gatehouse

/// The memo of the browser's fields gives what the header policy gives, and reuses a result only
/// for the very same upstream field list.
@Suite("BrowserHeadMemo")
struct BrowserHeadMemoTests {
    private let upstream = HTTPHeaders([("Server", "nginx"), ("Content-Type", "application/json"),
                                        ("Content-Length", "12"), ("Connection", "keep-alive, X-Hop"),
                                        ("X-Hop", "1"), ("Set-Cookie", "a=b"), ("X-Frame-Options", "SAMEORIGIN")])

    @Test("the same list: the same fields, from the memo")
    func reuses() {
        let memo = BrowserHeadMemo()
        let first = memo.fields(upstream, secure: SecuredAnswers(strictTransportSecurity: nil))
        #expect(first == SecuredAnswers(strictTransportSecurity: nil).relayed(upstream))
        #expect(first.fields.map(\.name) == ["Server", "Content-Type", "X-Frame-Options", "X-Content-Type-Options",
                                            "Referrer-Policy"])
        let copy = upstream
        let again = memo.fields(copy, secure: SecuredAnswers(strictTransportSecurity: nil))
        #expect(again.isSameStorage(as: first))
    }

    @Test("another list, even with the same fields, or another HSTS value: made anew")
    func remakes() {
        let memo = BrowserHeadMemo()
        let first = memo.fields(upstream, secure: SecuredAnswers(strictTransportSecurity: nil))
        // Equal fields in storage of their own.
        let equal = HTTPHeaders(upstream.fields.map { ($0.name, $0.value) })
        #expect(!equal.isSameStorage(as: upstream))
        let remade = memo.fields(equal, secure: SecuredAnswers(strictTransportSecurity: nil))
        #expect(remade == first && !remade.isSameStorage(as: first))
        let withHSTS = memo.fields(equal, secure: SecuredAnswers(strictTransportSecurity: "max-age=63072000"))
        #expect(withHSTS["Strict-Transport-Security"] == "max-age=63072000")
        var changed = upstream
        changed.add("X-Request-Id", "7")
        let other = memo.fields(changed, secure: SecuredAnswers(strictTransportSecurity: nil))
        #expect(other["X-Request-Id"] == "7" && other["Strict-Transport-Security"] == nil)
        #expect(other == SecuredAnswers(strictTransportSecurity: nil).relayed(changed))
    }
}
