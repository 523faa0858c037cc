/// Conversions between the gateway's time units, in one place: whole seconds (configuration, wall
/// time), nanoseconds (`UInt64`: monotonic readings, timeouts, grace periods) and `Duration`.
/// Negative amounts count as zero and overflow saturates: a typo in a configured time never traps.
public enum TimeUnits {
    public static let nanosecondsPerSecond: UInt64 = 1_000_000_000

    public static func nanoseconds(seconds: Int) -> UInt64 {
        guard seconds > 0 else { return 0 }
        let (product, overflow) = UInt64(seconds).multipliedReportingOverflow(by: nanosecondsPerSecond)
        return overflow ? .max : product
    }

    public static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (sum, overflow) = nanoseconds(seconds: Int(clamping: seconds))
            .addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow ? .max : sum
    }

    public static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
