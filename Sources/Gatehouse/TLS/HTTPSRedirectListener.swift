import EventLoops
import GatehouseCore
import HTTP1
import HTTPServer

/// The listener of `GATEHOUSE_HTTP_REDIRECT_LISTEN`: every request is sent to the same path and
/// query on `https://` with `308` (the method and body are kept), except ACME's http-01 challenges
/// (`/.well-known/acme-challenge/TOKEN`, RFC 8555 §8.3), answered from `challenges`.
///
/// The redirect's host is the public URL's, or the request's `Host` when that names one of the
/// ACME domains: never an arbitrary `Host`, so the listener cannot be made to send a browser to
/// another site.
struct HTTPSRedirectListener: HTTPHandler {
    let publicURL: PublicURL
    let acmeDomains: [String]
    let challenges: ACMEChallengeAnswers
    let secure: SecuredAnswers

    static let challengePrefix = "/.well-known/acme-challenge/"

    func answer(_ head: HTTPRequestHead, _ connection: RequestConnection) -> HandlerAnswer {
        let path = head.path
        if path.hasPrefix(Self.challengePrefix), head.method == "GET" || head.method == "HEAD" {
            let token = path.dropFirst(Self.challengePrefix.count)
            if let answer = challenges.keyAuthorization(for: token) { return .now(Self.challengeAnswer(answer)) }
            guard challenges.canLookUp, ACMEChallengeAnswers.isToken(token) else { return .now(noChallenge) }
            // Not known yet here: another instance may be ordering. The store says (off the loop).
            let (challenges, noChallenge, asked) = (challenges, noChallenge, String(token))
            return .inTask { _, writer in
                let answer = await challenges.lookedUpKeyAuthorization(for: Substring(asked))
                await writer.respond(answer.map(Self.challengeAnswer) ?? noChallenge)
            }
        }
        var headers: HTTPHeaders = ["Location": location(for: head), "Cache-Control": "no-store"]
        headers.set("Content-Length", "0")
        return .now(secure.response(HTTPResponse(status: 308, headers: headers)))
    }

    var noChallenge: HTTPResponse {
        secure.response(HTTPResponse.jsonError(status: 404, error: "not_found", description: "No such challenge."))
    }

    static func challengeAnswer(_ keyAuthorization: String) -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["Content-Type": "application/octet-stream", "Cache-Control": "no-store"],
                     body: Array(keyAuthorization.utf8))
    }

    /// `https://HOST[:PORT]PATH?QUERY` for this request.
    func location(for head: HTTPRequestHead) -> String {
        var origin = publicURL.isSecure ? publicURL.origin : "https://" + publicURL.host
        if let host = head.headers["Host"].map({ Self.hostName(of: $0) }), acmeDomains.contains(host), host != publicURL.host {
            origin = "https://" + host
        }
        // A target that is not origin-form (`*`, an absolute URI) goes to the root.
        let target = head.target.hasPrefix("/") && !head.target.hasPrefix("//") ? head.target : "/"
        return origin + target
    }

    /// The lower-cased name of a `Host` value without its port.
    static func hostName(of host: String) -> String {
        var name = Substring(host)
        if let colon = name.lastIndex(of: ":"), !name.hasSuffix("]") { name = name[..<colon] }
        return name.lowercased()
    }

    /// Starts the listener on `address` (one event loop: redirects and challenges are few).
    static func start(_ address: ListenAddress, handler: HTTPSRedirectListener, context: GatewayContext) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.host = address.host
        configuration.port = address.port
        configuration.loopCount = 1
        configuration.pinsLoopsToCPUs = false
        configuration.maxBodyBytes = 0
        let server = HTTPServer(configuration: configuration, handler: handler,
                                defaultHeaders: context.secure.serverDefaults, logger: context.logger)
        try server.start()
        return server
    }
}
