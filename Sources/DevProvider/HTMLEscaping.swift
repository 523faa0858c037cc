/// Escapes text for HTML element content and quoted attribute values (OWASP XSS prevention rule 1
/// and 2): `& < > " '` become character references.
func htmlEscape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for scalar in text.unicodeScalars {
        switch scalar {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out
}
