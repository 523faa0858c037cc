import EventLoops
import GatehouseCore
import HTTP1
import HTTPServer

/// The one door through which the security headers (`SecurityHeaders`: `nosniff`, `no-referrer`,
/// `DENY`, the CSP on HTML, HSTS on https) reach every answer the gateway writes: its own complete
/// answers and streamed heads, relayed upstream answers, and the server's own (malformed requests,
/// `500`s). A value of the configuration's HSTS setting; equal values secure alike, which is what
/// lets a memo of secured fields use it as (part of) its key.
struct SecuredAnswers: Sendable, Equatable {
    let strictTransportSecurity: String?
    /// `GATEHOUSE_CSP`'s field; nil for the default policy.
    var contentSecurityPolicy: HTTPField.Checked? = nil

    /// A complete answer of the gateway's own.
    func response(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        secure(&response.headers, html: SecurityHeaders.isHTML(response.headers))
        return response
    }

    /// A streamed head of the gateway's own.
    func head(_ head: HTTPResponseHead) -> HTTPResponseHead {
        var head = head
        secure(&head.headers, html: SecurityHeaders.isHTML(head.headers))
        return head
    }

    /// An upstream answer's fields as the browser gets them: the proxy's header policy, then the
    /// security headers the upstream did not set (noted while its fields are kept: no second pass).
    func relayed(_ upstreamHeaders: HTTPHeaders) -> HTTPHeaders {
        var present = SecurityHeaders.Present()
        var headers = ProxyHeaderPolicy.downstreamResponseHeaders(from: upstreamHeaders, noting: &present)
        SecurityHeaders.apply(to: &headers, present: present, strictTransportSecurity: strictTransportSecurity,
                              contentSecurityPolicy: contentSecurityPolicy)
        return headers
    }

    /// The fields the server adds to the answers it writes without the gateway (malformed requests,
    /// limits, `500`s).
    var serverDefaults: HTTPHeaders {
        var defaults = HTTPHeaders()
        secure(&defaults, html: false)
        return defaults
    }

    /// The gateway's own fields secured with this configuration's HSTS and CSP.
    private func secure(_ headers: inout HTTPHeaders, html: Bool) {
        SecurityHeaders.apply(to: &headers, html: html, strictTransportSecurity: strictTransportSecurity,
                              contentSecurityPolicy: contentSecurityPolicy)
    }

    /// `inner` securing whatever goes through it (complete or streamed).
    func writer(_ inner: any HTTPResponseWriter) -> FieldingResponseWriter<SecuredAnswers> {
        FieldingResponseWriter(inner, fields: self)
    }
}

/// Fields one policy adds to every answer: the security headers (`SecuredAnswers`), the CORS
/// fields of an allowed origin (`CrossOriginFields`).
protocol AnswerFields: Sendable {
    func response(_ response: HTTPResponse) -> HTTPResponse
    func head(_ head: HTTPResponseHead) -> HTTPResponseHead
}

extension SecuredAnswers: AnswerFields {}

/// Adds a policy's fields to whatever a handler writes through it (complete or streamed); a `101`
/// gets none: what follows is not an HTTP answer the browser renders.
final class FieldingResponseWriter<Fields: AnswerFields>: HTTPResponseWriter, @unchecked Sendable {
    private let inner: any HTTPResponseWriter
    private let fields: Fields

    init(_ inner: any HTTPResponseWriter, fields: Fields) {
        self.inner = inner
        self.fields = fields
    }

    var headWritten: Bool { inner.headWritten }

    func respond(_ response: HTTPResponse) async {
        await inner.respond(fields.response(response))
    }

    func respondImmediately(_ response: HTTPResponse) -> Bool {
        inner.respondImmediately(fields.response(response))
    }

    func writeHead(_ head: HTTPResponseHead, contentLength: Int?) async throws(HTTPWriteError) {
        try await inner.writeHead(fields.head(head), contentLength: contentLength)
    }

    func writeBody(_ bytes: [UInt8]) async throws(HTTPWriteError) { try await inner.writeBody(bytes) }
    func finish() async throws(HTTPWriteError) { try await inner.finish() }
    func abort() { inner.abort() }

    func switchProtocols(_ head: HTTPResponseHead) async throws(HTTPWriteError) -> any TunnelEndpoint {
        try await inner.switchProtocols(head)
    }
}
