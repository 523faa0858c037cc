import GatehouseCore
import GatehouseEncoding
import HTTP1

/// `GET /providers` and the chooser `/login` shows without `provider`: how the SPA and the person
/// learn which providers there are. Neither needs a session or says more than names.
enum ProviderEndpoints {
    /// `{"providers":[{"name":…,"displayName":…}]}` in configured order (built once, at start).
    static func list(_ providers: ProviderRegistry) -> HTTPResponse {
        let entries = providers.all.map { provider in
            "{\"name\":\(JSONString.quoted(provider.name)),\"displayName\":\(JSONString.quoted(provider.displayName))}"
        }
        return Responses.json(200, Array("{\"providers\":[\(entries.joined(separator: ","))]}".utf8))
    }

    /// A page of links, one per provider, each keeping the validated `returnTo` (and the login
    /// parameters the configuration passes on). Plain HTML: no script, the usual page's look.
    static func chooser(_ providers: ProviderRegistry, returnTo: String?, passing parameters: [(String, String)]) -> HTTPResponse {
        var links = ""
        for provider in providers.all {
            var query: [(String, String)] = [("provider", provider.name)]
            if let returnTo { query.append(("returnTo", returnTo)) }
            query += parameters
            let href = "/login?" + PercentEncoding.query(query)
            links += "<li><a href=\"\(TextEscaping.html(href))\">Continue with \(TextEscaping.html(provider.displayName))</a></li>\n"
        }
        let body = """
        <!doctype html>
        <html lang="en">
        <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Sign in · Gatehouse</title></head>
        <body>
        <main>
        <h1>Sign in</h1>
        <nav aria-label="Sign-in providers">
        <ul>
        \(links)</ul>
        </nav>
        <p><a href="/">Back to the application</a></p>
        </main>
        </body>
        </html>

        """
        return HTTPResponse(status: 200, headers: ["Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"],
                            body: body)
    }
}
