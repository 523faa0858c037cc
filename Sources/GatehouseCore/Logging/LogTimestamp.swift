import GatehouseTime

/// ISO-8601 UTC timestamps with milliseconds (`2025-03-01T12:34:56.789Z`), without Foundation.
public enum LogTimestamp {
    /// The current wall-clock time.
    public static func now() -> String {
        // After 1970, so the remainder is the fraction of the second.
        let nanoseconds = SystemClock().unixNanoseconds()
        return format(seconds: Int(nanoseconds / 1_000_000_000), milliseconds: Int(nanoseconds % 1_000_000_000 / 1_000_000))
    }

    /// Formats seconds since the Unix epoch (UTC) with milliseconds, using the civil-from-days
    /// algorithm (H. Hinnant), so it is pure and testable.
    public static func format(seconds: Int, milliseconds: Int) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secOfDay = seconds - days * 86_400
        let (year, month, day) = CivilDate.date(days: Int64(days))
        return "\(pad(Int(year), 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secOfDay / 3600, 2)):\(pad(secOfDay % 3600 / 60, 2)):\(pad(secOfDay % 60, 2)).\(pad(milliseconds, 3))Z"
    }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    /// The wall clock as `now()` writes it, the date and time of day formatted once a second.
    struct Seconds {
        private var second = Int.min
        private var prefix: [UInt8] = []

        mutating func appendNow(to out: inout [UInt8]) {
            let nanoseconds = SystemClock().unixNanoseconds()
            let seconds = Int(nanoseconds / 1_000_000_000)
            if seconds != second {
                // `format` with the milliseconds cut off: "2025-03-01T12:34:56." (20 bytes).
                prefix = Array(LogTimestamp.format(seconds: seconds, milliseconds: 0).utf8.prefix(20))
                second = seconds
            }
            out.append(contentsOf: prefix)
            let milliseconds = Int(nanoseconds % 1_000_000_000 / 1_000_000)
            out.append(UInt8(ascii: "0") + UInt8(milliseconds / 100))
            out.append(UInt8(ascii: "0") + UInt8(milliseconds / 10 % 10))
            out.append(UInt8(ascii: "0") + UInt8(milliseconds % 10))
            out.append(UInt8(ascii: "Z"))
        }
    }
}
