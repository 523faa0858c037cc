import GatehouseCore
import HTTP1

/// Answers shared by several endpoints.
enum Responses {
    static func redirect(_ location: String, cookies: [String] = []) -> HTTPResponse {
        var headers: HTTPHeaders = ["Location": location, "Cache-Control": "no-store"]
        for cookie in cookies { headers.add("Set-Cookie", cookie) }
        return HTTPResponse(status: 302, headers: headers)
    }

    static func json(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"], body: body)
    }

    static let csrfMissing = HTTPResponse.jsonError(
        status: 401, error: "csrf_header_missing",
        description: "This endpoint requires the anti-forgery header.")

    static let unauthenticated = HTTPResponse.jsonError(
        status: 401, error: "unauthenticated", description: "No valid session.")

    /// The session store did not answer: `503` with `Retry-After`, as JSON for the SPA's calls or as
    /// an HTML page for a top-level navigation.
    static func sessionStoreUnavailable(html: Bool = false) -> HTTPResponse {
        var response = html
            ? HTMLPage.error(status: 503, title: "Temporarily unavailable",
                             message: "Sessions cannot be reached right now. Nothing was changed; please try again shortly.")
            : HTTPResponse.jsonError(status: 503, error: "session_store_unavailable",
                                     description: "The session store does not answer.")
        response.headers.set("Retry-After", "5")
        return response
    }

    static func methodNotAllowed(_ allowed: String) -> HTTPResponse {
        var response = HTTPResponse.jsonError(status: 405, error: "method_not_allowed",
                                              description: "Use \(allowed) for this endpoint.")
        response.headers.set("Allow", allowed)
        return response
    }
}
