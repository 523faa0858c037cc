import GatehouseEncoding
import HTTP1

/// The small HTML pages the gateway shows itself (login failures). They never echo a token, a code or
/// a provider's raw text: the operator finds the reason in the log, the person gets a way forward.
enum HTMLPage {
    static func error(status: Int, title: String, message: String) -> HTTPResponse {
        let body = """
        <!doctype html>
        <html lang="en">
        <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(TextEscaping.html(title)) · Gatehouse</title></head>
        <body>
        <main>
        <h1>\(TextEscaping.html(title))</h1>
        <p>\(TextEscaping.html(message))</p>
        <p><a href="/login">Try signing in again</a> · <a href="/">Back to the application</a></p>
        </main>
        </body>
        </html>

        """
        return HTTPResponse(status: status,
                            headers: ["Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"],
                            body: body)
    }

}
