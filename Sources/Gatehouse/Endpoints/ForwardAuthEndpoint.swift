import GatehouseCore
import HTTP1
import HTTPServer
import Synchronization

/// `/auth`: the question an ingress in front asks before it forwards a request itself (nginx
/// `auth_request`, Traefik `forwardAuth`, Caddy `forward_auth`; SPEC "Behind the ingress you
/// already run"). The answer is the routes' decision (`RouteDecision`, through `RouteCredentials`)
/// for the policy the query names, on the loop for a cached session as a route's call is:
/// `200` with the identity headers (and the assertion, the access token when asked), `401`,
/// `403`, or for a browser's navigation through Traefik or Caddy a `302` to `/login`.
struct ForwardAuthEndpoint {
    let context: GatewayContext

    func answer(_ head: HTTPRequestHead, csrfHeader: String, fieldsRead: RequestFieldMemo,
                policies: ForwardAuthPolicies) -> HandlerAnswer {
        let context = self.context
        let original = ForwardAuthRequest(headers: head.headers, requestMethod: head.method)
        let route: UpstreamRoute
        switch policies.route(for: head.query) {
        case .route(let found): route = found
        case .refusal(let refusal): return .now(context.secure.response(refusal))
        }
        // The original request's method decides, as it would on a route.
        if !original.isSafeMethod, !fieldsRead.antiForgeryHeaderValid(named: csrfHeader) {
            return .now(context.secure.response(Responses.csrfMissing))
        }
        if let decided = RouteCredentials.cachedAuthorization(
            for: route, headers: head.headers, loneKey: { fieldsRead.loneSessionKey(in: context.sessions) }, context: context) {
            return .now(context.secure.response(Self.response(decided, original: original, route: route, context: context)))
        }
        return .inTask { request, writer in
            let decided = await RouteCredentials.authorization(for: route, headers: request.head.headers, context: context)
            await writer.respond(context.secure.response(Self.response(decided, original: original, route: route, context: context)))
        }
    }

    /// The decision as the ingress reads it.
    static func response(_ outcome: RouteCredentials.Outcome, original: ForwardAuthRequest, route: UpstreamRoute,
                         context: GatewayContext) -> HTTPResponse {
        switch outcome {
        case .forward(let authorization, let identity, _):
            var headers: HTTPHeaders = ["Cache-Control": "no-store"]
            for field in identity { headers.add(field.field.name, field.field.value) }
            if route.identity.bearer == .access, let authorization { headers.add("Authorization", authorization) }
            return HTTPResponse(status: 200, headers: headers)
        case .refuse(let refusal):
            // A navigation is a `GET`, so its `401` is never the anti-forgery one: it means "sign in"
            // (no session, or it ended; `/auth` has no step-up options).
            guard refusal.status == 401, original.redirectsToLogin else { return refusal }
            var redirect = Responses.redirect(original.loginLocation(publicOrigin: context.configuration.publicURL.origin))
            for cookie in refusal.headers.values("Set-Cookie") { redirect.headers.add("Set-Cookie", cookie) }
            return redirect
        }
    }
}

/// The route policies of the `/auth` queries seen, parsed once each: an ingress asks with the same
/// few queries (one per location it protects) on every request. Bounded: past 64 different
/// queries each is parsed anew, never kept.
final class ForwardAuthPolicies: Sendable {
    enum Parsed: Sendable {
        case route(UpstreamRoute)
        /// `400 invalid_auth_query`: the ingress's configuration needs fixing.
        case refusal(HTTPResponse)
    }

    private let parsed = Mutex<[Substring: Parsed]>([:])

    func route(for query: Substring?) -> Parsed {
        let key = query ?? ""
        if let known = parsed.withLock({ $0[key] }) { return known }
        let result: Parsed
        do throws(ForwardAuthPolicy.ParseError) { result = .route(try ForwardAuthPolicy.route(query: query)) } catch {
            result = .refusal(HTTPResponse.jsonError(status: 400, error: "invalid_auth_query",
                                                     description: "The /auth query is not valid: \(error.description)."))
        }
        parsed.withLock { table in
            if table.count < 64 { table[Substring(String(key))] = result }
        }
        return result
    }
}
