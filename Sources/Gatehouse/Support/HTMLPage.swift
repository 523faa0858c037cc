import HTTP1

/// The small HTML pages the gateway shows itself (login failures). They never echo a token, a code or
/// a provider's raw text: the operator finds the reason in the log, the person gets a way forward.
enum HTMLPage {
    static func error(status: Int, title: String, message: String) -> HTTPResponse {
        let body = """
        <!doctype html>
        <html lang="en">
        <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title)) · Gatehouse</title></head>
        <body>
        <main>
        <h1>\(escape(title))</h1>
        <p>\(escape(message))</p>
        <p><a href="/login">Try signing in again</a> · <a href="/">Back to the application</a></p>
        </main>
        </body>
        </html>

        """
        return HTTPResponse(status: status,
                            headers: ["Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"],
                            body: body)
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for ch in text {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(ch)
            }
        }
        return out
    }
}
