import HTTP1

/// The JSON error answers of the static file server, in the gateway's common shape
/// `{"error": "<code>", "error_description": "<human text>"}`.
///
/// The descriptions are constants: nothing from the request is echoed back, so no escaping is needed
/// and a hostile path can never shape the body.
enum StaticErrorResponse {
    static func notFound(varyOnAccept: Bool = false) -> HTTPResponse {
        var response = json(status: 404, error: "not_found", description: "No file at this path.")
        if varyOnAccept { response.headers.add("Vary", "Accept") }
        return response
    }

    static func malformedPath() -> HTTPResponse {
        json(status: 400, error: "invalid_request", description: "The request path is not validly percent-encoded.")
    }

    static func methodNotAllowed() -> HTTPResponse {
        var response = json(status: 405, error: "method_not_allowed",
                            description: "Static files answer GET and HEAD only.")
        response.headers.add("Allow", "GET, HEAD")
        return response
    }

    /// RFC 9110 §15.5.17: a `416` names the current length in `Content-Range: bytes */<length>`.
    static func rangeNotSatisfiable(length: Int) -> HTTPResponse {
        var response = json(status: 416, error: "range_not_satisfiable",
                            description: "The requested byte range lies outside the file.")
        response.headers.add("Content-Range", "bytes */\(length)")
        return response
    }

    static func unreadable() -> HTTPResponse {
        json(status: 500, error: "server_error", description: "The file could not be read.")
    }

    static func json(status: Int, error: String, description: String) -> HTTPResponse {
        HTTPResponse(status: status,
                     headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
                     body: #"{"error":"\#(error)","error_description":"\#(description)"}"#)
    }
}
