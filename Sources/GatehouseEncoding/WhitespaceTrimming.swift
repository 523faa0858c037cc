/// Whitespace trimming without Foundation (`trimmingCharacters(in:)` needs all of Foundation and ICU).
extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (Unicode white space, newlines
    /// kept), as Foundation's `.whitespaces`.
    public func trimmingWhitespace() -> String {
        trimming { $0.isWhitespace && !$0.isNewline }
    }

    /// The text without leading and trailing white space, newlines included, as Foundation's
    /// `.whitespacesAndNewlines`.
    public func trimmingWhitespaceAndNewlines() -> String {
        trimming(\.isWhitespace)
    }

    private func trimming(_ isTrimmed: (Character) -> Bool) -> String {
        guard let first = firstIndex(where: { !isTrimmed($0) }), let last = lastIndex(where: { !isTrimmed($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
