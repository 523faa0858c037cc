import EventLoops
import GatehouseCore
import HTTP1
import HTTPServer

/// CORS for the pages of `GATEHOUSE_CORS_ORIGINS` (SPEC "Behind the ingress you already run"):
/// which requests it concerns, the preflight's answer, and the fields every other answer to a
/// listed origin carries, whichever way it is written.
enum CrossOriginAnswers {
    /// The routes and the endpoints an SPA on another origin calls with its cookie.
    static func concerns(_ route: RequestRoute) -> Bool {
        switch route {
        case .api, .own(.user), .own(.logout), .own(.sessions), .own(.sessionsRevoke): true
        default: false
        }
    }

    /// Whether `head` is a CORS preflight (RFC 9110 `OPTIONS` with `Access-Control-Request-Method`).
    static func isPreflight(_ head: HTTPRequestHead) -> Bool {
        head.method == "OPTIONS" && head.headers.contains("Access-Control-Request-Method")
    }

    /// The preflight's answer: `204` with the CORS fields for a listed origin, `403` with none for
    /// any other (the browser then refuses the call; nothing is forwarded either way).
    static func preflight(_ head: HTTPRequestHead, route: RequestRoute, origin: String?, csrfHeader: String) -> HTTPResponse {
        guard let origin else {
            var refused = HTTPResponse.jsonError(status: 403, error: "origin_not_allowed",
                                                 description: "This origin may not call the gateway (GATEHOUSE_CORS_ORIGINS).")
            refused.headers.add("Vary", "Origin")
            return refused
        }
        let methods = route.allowedMethods ?? ProxyMethodPolicy.allowed
        var headers: HTTPHeaders = ["Cache-Control": "no-store"]
        for (name, value) in CORSPolicy.preflightFields(origin: origin, methods: methods, csrfHeader: csrfHeader,
                                                        requestedHeaders: head.headers.values("Access-Control-Request-Headers").map { $0[...] }) {
            headers.add(name, value)
        }
        return HTTPResponse(status: 204, headers: headers)
    }

    /// `answer` with the CORS fields for `origin` on whatever it writes. Called only for a listed
    /// origin's request, which the router keeps off the loop transport (its writer is not wrapped).
    static func answer(_ answer: HandlerAnswer, origin: String) -> HandlerAnswer {
        switch answer {
        case .now(var response):
            add(origin, to: &response.headers)
            return .now(response)
        case .inTask(let work):
            return .inTask { request, writer in await work(request, FieldingResponseWriter(writer, fields: CrossOriginFields(origin: origin))) }
        case .onLoop:
            return answer
        }
    }

    /// The upstream's own CORS fields give way to the gateway's: two `Access-Control-Allow-Origin`
    /// fields fail the browser's check, and the gateway alone knows the listed origins.
    static func add(_ origin: String, to headers: inout HTTPHeaders) {
        headers.removeAll { field in
            let name = field.name.lowercased()
            return name == "access-control-allow-origin" || name == "access-control-allow-credentials"
        }
        for (name, value) in CORSPolicy.answerFields(origin: origin) { headers.add(name, value) }
    }
}

/// The CORS fields of an allowed origin, on whatever goes through a `FieldingResponseWriter`.
struct CrossOriginFields: AnswerFields {
    let origin: String

    func response(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        CrossOriginAnswers.add(origin, to: &response.headers)
        return response
    }

    func head(_ head: HTTPResponseHead) -> HTTPResponseHead {
        var head = head
        CrossOriginAnswers.add(origin, to: &head.headers)
        return head
    }
}
