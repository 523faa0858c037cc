/// Strong entity tags for files and the `If-None-Match` / `If-Range` comparisons (RFC 9110 §8.8.3,
/// §13.1.2, §13.1.5).
///
/// The tag is `"<size hex>-<mtime ns hex>"`, and `"<size hex>-<mtime ns hex>-gz"` for the gzip
/// variant: the two representations differ byte for byte, so they must not share a strong tag.
enum EntityTag {
    static func forFile(size: Int, modificationNanoseconds: Int64) -> String {
        "\"\(String(size, radix: 16))-\(String(UInt64(bitPattern: modificationNanoseconds), radix: 16))\""
    }

    static func gzipVariant(of tag: String) -> String {
        guard tag.hasSuffix("\"") else { return tag + "-gz" }
        return String(tag.dropLast()) + "-gz\""
    }

    /// RFC 9110 §13.1.2: `If-None-Match` uses the weak comparison, `*` matches any current
    /// representation, and the field is a comma-separated list (several fields are one list).
    static func noneMatchHits(_ fieldValues: [String], current: String) -> Bool {
        let currentOpaque = opaque(current)
        for value in fieldValues {
            for candidate in list(value) {
                if candidate == "*" { return true }
                if opaque(candidate) == currentOpaque { return true }
            }
        }
        return false
    }

    /// RFC 9110 §13.1.5: `If-Range` with a tag uses the strong comparison, so a weak tag never matches.
    static func strongMatch(_ candidate: Substring, current: String) -> Bool {
        !candidate.hasPrefix("W/") && candidate == current[...]
    }

    /// Splits an entity-tag list. Tags are quoted and may contain commas, so a plain split is wrong.
    static func list(_ value: String) -> [Substring] {
        var tags: [Substring] = []
        var index = value.startIndex
        while index < value.endIndex {
            while index < value.endIndex, value[index] == " " || value[index] == "\t" || value[index] == "," {
                index = value.index(after: index)
            }
            guard index < value.endIndex else { break }
            let start = index
            if value[index...].hasPrefix("W/") { index = value.index(index, offsetBy: 2) }
            if index < value.endIndex, value[index] == "\"" {
                index = value.index(after: index)
                while index < value.endIndex, value[index] != "\"" { index = value.index(after: index) }
                if index < value.endIndex { index = value.index(after: index) }
            } else {
                while index < value.endIndex, value[index] != "," { index = value.index(after: index) }
            }
            tags.append(value[start..<index].trimmingASCIIWhitespace())
        }
        return tags
    }

    private static func opaque(_ tag: some StringProtocol) -> Substring {
        let tag = Substring(tag)
        return tag.hasPrefix("W/") ? tag.dropFirst(2) : tag
    }
}
