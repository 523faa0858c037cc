import GatehouseEncoding

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
        var lines = [["ID", "SUB", "CREATED", "LAST SEEN", "IDLE EXPIRES", "EXPIRES", "PROVIDER"].joined(separator: "\t")]
        for s in sessions {
            lines.append([terminalSafe(s.idPrefix), terminalSafe(s.sub), time(s.createdAt), time(s.lastSeenAt),
                          time(s.idleExpiresAt), time(s.expiresAt), terminalSafe(s.provider)].joined(separator: "\t"))
        }
        return lines.joined(separator: "\n")
    }

    /// One JSON array of `{"id","sub","createdAt","lastSeenAt","idleExpiresAt","expiresAt","provider"}`.
    public static func json(_ sessions: [SessionSummary]) -> String {
        let rows = sessions.map { s in
            "{\"id\":\(jsonQuoted(s.idPrefix)),\"sub\":\(jsonQuoted(s.sub)),\"createdAt\":\(s.createdAt),"
                + "\"lastSeenAt\":\(s.lastSeenAt),\"idleExpiresAt\":\(s.idleExpiresAt),\"expiresAt\":\(s.expiresAt),"
                + "\"provider\":\(jsonQuoted(s.provider))}"
        }
        return "[" + rows.joined(separator: ",") + "]"
    }

    /// `text` with every character a terminal could act on written as `\u{…}`, tabs and newlines
    /// as `\t` and `\n` (they would break the table's columns and rows), and `\` as `\\` (so the
    /// escapes cannot be forged).
    public static func terminalSafe(_ text: String) -> String {
        TextEscaping.needsControlEscaping(text) ? TextEscaping.controlEscaped(text) : text
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
                if TextEscaping.isUnsafe(scalar) {
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

}
