import GatehouseTime

/// HTTP dates (RFC 9110 §5.6.7): `Last-Modified` is written as an IMF-fixdate; `If-Modified-Since` and
/// `If-Range` are read in all three formats a recipient must accept. Pure arithmetic on the proleptic
/// Gregorian calendar: no locale, no time zone database, no Foundation.
enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longWeekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for seconds since 1970.
    static func format(_ seconds: Int64) -> String {
        let days = floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilDate.date(days: days)
        let weekday = Int(((days % 7) + 11) % 7)  // 1970-01-01 was a Thursday (index 4)
        return "\(weekdays[weekday]), \(pad(day)) \(months[month - 1]) \(year) "
            + "\(pad(Int(secondOfDay / 3600))):\(pad(Int(secondOfDay / 60 % 60))):\(pad(Int(secondOfDay % 60))) GMT"
    }

    /// Seconds since 1970 for an IMF-fixdate, RFC 850 or asctime date; nil for anything else.
    static func parse(_ text: some StringProtocol) -> Int64? {
        let parts = String(text).split(separator: " ", omittingEmptySubsequences: true)
        if parts.count == 6, parts[5] == "GMT", parts[0].hasSuffix(","), weekdays.contains(String(parts[0].dropLast())) {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            return build(day: parts[1], month: parts[2], year: parts[3], time: parts[4], twoDigitYear: false)
        }
        if parts.count == 4, parts[3] == "GMT", parts[0].hasSuffix(","),
           longWeekdays.contains(String(parts[0].dropLast())) {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let date = parts[1].split(separator: "-", omittingEmptySubsequences: false)
            guard date.count == 3 else { return nil }
            return build(day: date[0], month: date[1], year: date[2], time: parts[2], twoDigitYear: true)
        }
        if parts.count == 5, weekdays.contains(String(parts[0])) {
            // asctime: Sun Nov  6 08:49:37 1994
            return build(day: parts[2], month: parts[1], year: parts[4], time: parts[3], twoDigitYear: false)
        }
        return nil
    }

    private static func build(day: Substring, month: Substring, year: Substring, time: Substring,
                              twoDigitYear: Bool) -> Int64? {
        guard let monthIndex = months.firstIndex(of: String(month)),
              let day = number(day, digits: 1...2), day >= 1, day <= 31,
              var year = number(year, digits: twoDigitYear ? 2...2 : 4...4)
        else { return nil }
        // RFC 9110 §5.6.7: a two-digit year more than 50 years in the future is in the past century;
        // reading it as 19xx/20xx split at 70 matches that for every date a file system can carry.
        if twoDigitYear { year += year < 70 ? 2000 : 1900 }
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3,
              let hour = number(clock[0], digits: 2...2), hour < 24,
              let minute = number(clock[1], digits: 2...2), minute < 60,
              let second = number(clock[2], digits: 2...2), second < 61
        else { return nil }
        let days = CivilDate.days(year: year, month: monthIndex + 1, day: day)
        return days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    private static func number(_ text: Substring, digits: ClosedRange<Int>) -> Int? {
        guard digits.contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(text)
    }

    private static func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }
}
