import HTTP1
import Testing
@testable import Gatehouse

@Suite("CORS fields on the gateway's answers")
struct CrossOriginAnswersTests {
    @Test("an upstream's own Access-Control-Allow-Origin and -Credentials give way to the gateway's")
    func upstreamFieldsReplaced() {
        var headers = HTTPHeaders()
        headers.add("Access-Control-Allow-Origin", "*")
        headers.add("access-control-allow-credentials", "false")
        headers.add("Access-Control-Expose-Headers", "X-Total")
        headers.add("Vary", "Accept-Encoding")
        CrossOriginAnswers.add("https://app.example.com", to: &headers)
        #expect(headers.values("Access-Control-Allow-Origin") == ["https://app.example.com"])
        #expect(headers.values("Access-Control-Allow-Credentials") == ["true"])
        #expect(headers.values("Access-Control-Expose-Headers") == ["X-Total"])
        #expect(headers.values("Vary") == ["Accept-Encoding", "Origin"])
    }
}
