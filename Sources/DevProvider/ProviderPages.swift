import GatehouseEncoding
/// The provider's HTML pages. Self-contained (no external assets), and every value that came from a
/// request is escaped with `htmlEscape` before it reaches the markup.
enum ProviderPages {
    /// The sign-in form of `GET /authorize`. Hidden inputs carry the authorization request so that
    /// `POST /authorize` can validate it again; the visible fields are `username` and `email`.
    static func signIn(formAction: String, clientID: String, scopes: [String],
                       hiddenFields: [(String, String)], problem: String? = nil,
                       username: String = "", email: String = "") -> String {
        let hidden = hiddenFields.map { name, value in
            #"<input type="hidden" name="\#(TextEscaping.html(name))" value="\#(TextEscaping.html(value))">"#
        }.joined(separator: "\n      ")
        let problemMarkup = problem.map { #"<p class="problem" role="alert">\#(TextEscaping.html($0))</p>"# } ?? ""
        return layout(title: "Sign in", body: """
            <h1>Sign in</h1>
            <p><strong>\(TextEscaping.html(clientID))</strong> asks for: \(TextEscaping.html(scopes.joined(separator: " ")))</p>
            \(problemMarkup)
            <form method="post" action="\(TextEscaping.html(formAction))">
              \(hidden)
              <label for="username">User name</label>
              <input id="username" name="username" autocomplete="username" required maxlength="64" autofocus value="\(TextEscaping.html(username))">
              <label for="email">Email <span class="optional">(optional)</span></label>
              <input id="email" name="email" type="email" autocomplete="email" maxlength="254" value="\(TextEscaping.html(email))">
              <div class="actions">
                <button type="submit" id="submit" name="action" value="approve">Sign in</button>
                <button type="submit" id="deny" name="action" value="deny" formnovalidate class="secondary">Deny</button>
              </div>
            </form>
            <p class="note">Any user name signs in: this provider checks no password.</p>
            """)
    }

    /// A request that cannot be sent back to the client (unknown client, unregistered redirect URI:
    /// RFC 6749 §4.1.2.1 forbids redirecting those).
    static func error(_ message: String) -> String {
        layout(title: "Request refused", body: """
            <h1>Request refused</h1>
            <p class="problem">\(TextEscaping.html(message))</p>
            """)
    }

    static func signedOut(note: String?) -> String {
        layout(title: "Signed out", body: """
            <h1>Signed out</h1>
            <p>You are signed out of the development provider.</p>
            \(note.map { "<p class=\"note\">\(TextEscaping.html($0))</p>" } ?? "")
            """)
    }

    private static func layout(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(TextEscaping.html(title)) · Gatehouse development provider</title>
        <style>
          body { font: 16px/1.5 system-ui, sans-serif; background: #f4f5f7; color: #1d2330; margin: 0; }
          main { max-width: 24rem; margin: 4rem auto; background: #fff; padding: 2rem; border-radius: 8px;
                 box-shadow: 0 1px 4px rgba(0,0,0,.12); }
          .badge { display: inline-block; background: #fff3cd; color: #7a5600; border: 1px solid #e6c66b;
                   border-radius: 4px; padding: .1rem .5rem; font-size: .8rem; margin: 0 0 1rem; }
          h1 { font-size: 1.4rem; margin: 0 0 1rem; }
          label { display: block; margin: 1rem 0 .25rem; font-weight: 600; }
          .optional { font-weight: 400; color: #5b6473; }
          input { box-sizing: border-box; width: 100%; padding: .5rem; border: 1px solid #b8bec9; border-radius: 4px; font: inherit; }
          .actions { display: flex; gap: .5rem; margin-top: 1.5rem; }
          button { flex: 1; padding: .6rem; border: 0; border-radius: 4px; background: #2456c9; color: #fff; font: inherit; cursor: pointer; }
          button.secondary { background: #e3e6eb; color: #1d2330; }
          .problem { color: #a11b1b; }
          .note { color: #5b6473; font-size: .85rem; }
        </style>
        </head>
        <body>
        <main>
        <p class="badge">Development provider · not for production</p>
        \(body)
        </main>
        </body>
        </html>
        """
    }
}
