/// Escapes for text that people read: HTML pages, log lines, terminal tables, configuration
/// messages. Whatever reaches them may come from a browser, a provider or an operator's typo, and
/// must not be able to inject markup, forge a log line or drive a terminal.
public enum TextEscaping {
    /// Text for HTML element content and quoted attribute values (OWASP XSS prevention rules 1
    /// and 2): `& < > " '` become character references.
    public static func html(_ text: some StringProtocol) -> String {
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

    /// `text` as one line a terminal or log viewer cannot be driven by: `\` as `\\` (so escapes
    /// cannot be forged), tab, newline and carriage return as `\t`, `\n`, `\r`, `"` as `\"` when
    /// `escapingQuotes`, and every other unsafe character (`isUnsafe`) as `\u{…}`. At most
    /// `limit` characters are kept; a longer text ends in `…`.
    public static func controlEscaped(_ text: some StringProtocol, escapingQuotes: Bool = false,
                                      limit: Int = .max) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            count += 1
            if count > limit { out += "…"; break }
            switch scalar {
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\"" where escapingQuotes: out += "\\\""
            default:
                if isUnsafe(scalar) {
                    out += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// Whether `controlEscaped` would change `text` (no copy is needed when it would not).
    public static func needsControlEscaping(_ text: some StringProtocol) -> Bool {
        text.unicodeScalars.contains { $0 == "\\" || isUnsafe($0) }
    }

    /// Control (C0, DEL, C1), format (bidi overrides and isolates, zero-width characters, tags)
    /// and line/paragraph separators: what a terminal acts on or what reorders what a person reads.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        if v < 0x20 || (v >= 0x7F && v < 0xA0) { return true }
        if v < 0xA0 { return false }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}
