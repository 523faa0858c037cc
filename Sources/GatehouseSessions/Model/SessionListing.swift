/// The output of `gatehouse sessions list`, as a tab-separated table or one JSON array.
///
/// `sub` comes from the provider: whoever controls an account's subject (a misconfigured or hostile
/// provider, a self-service identity source) must not be able to drive the operator's terminal
/// with it. Control characters (C0, DEL, C1: `ESC [ 2 J` clears the screen), Unicode format
/// characters (bidirectional overrides that reorder what the operator reads) and line or paragraph
/// separators are shown escaped in the table and written as `\uXXXX` in JSON, which keeps the
/// JSON valid and its decoded strings unchanged.
public enum SessionListing {
    /// Header and one line per session; `time` formats the unix timestamps.
    public static func table(_ sessions: [SessionSummary], time: (Int64) -> String) -> String {
        var lines = [["ID", "SUB", "CREATED", "LAST SEEN", "IDLE EXPIRES", "EXPIRES"].joined(separator: "\t")]
        for s in sessions {
            lines.append([terminalSafe(s.idPrefix), terminalSafe(s.sub), time(s.createdAt), time(s.lastSeenAt),
                          time(s.idleExpiresAt), time(s.expiresAt)].joined(separator: "\t"))
        }
        return lines.joined(separator: "\n")
    }

    /// One JSON array of `{"id","sub","createdAt","lastSeenAt","idleExpiresAt","expiresAt"}`.
    public static func json(_ sessions: [SessionSummary]) -> String {
        let rows = sessions.map { s in
            "{\"id\":\(jsonQuoted(s.idPrefix)),\"sub\":\(jsonQuoted(s.sub)),\"createdAt\":\(s.createdAt),"
                + "\"lastSeenAt\":\(s.lastSeenAt),\"idleExpiresAt\":\(s.idleExpiresAt),\"expiresAt\":\(s.expiresAt)}"
        }
        return "[" + rows.joined(separator: ",") + "]"
    }

    /// `text` with every character a terminal could act on written as `\u{…}`, tabs and newlines
    /// as `\t` and `\n` (they would break the table's columns and rows), and `\` as `\\` (so the
    /// escapes cannot be forged).
    public static func terminalSafe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "\\" || isUnsafe($0) }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
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

    /// A JSON string literal (RFC 8259 §7) in which every unsafe character is a `\uXXXX` escape
    /// (a UTF-16 surrogate pair beyond the BMP).
    public static func jsonQuoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if isUnsafe(scalar) {
                    for unit in String(scalar).utf16 {
                        let hex = String(unit, radix: 16)
                        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    }
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Control (C0, DEL, C1), format (bidi overrides and isolates, zero-width characters, tags)
    /// and line/paragraph separators.
    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        if v < 0x20 || (v >= 0x7F && v < 0xA0) { return true }
        if v < 0xA0 { return false }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}
