/// How many pending logins may wait at once. `GET /login` needs no credentials, so without these
/// caps a flood of logins (from one browser or from many fresh ones) would grow the table without
/// bound. Each insert evicts, in the same transaction, whatever goes over a cap: the logins of the
/// same browser binding closest to expiry (the oldest), then the oldest rows overall (expired rows
/// first). An evicted login simply fails at `/callback` like an expired one.
public struct PendingLoginLimits: Sendable, Equatable {
    /// Logins pending at once for one login-binding cookie (one browser: its tabs).
    public var perBinding: Int
    /// Pending-login rows in the whole store.
    public var total: Int

    /// 10 per browser (more tabs than anyone signs in from at once), 10,000 in all (a login every
    /// 60 ms, sustained over the 10-minute pending lifetime).
    public static let standard = PendingLoginLimits(perBinding: 10, total: 10_000)

    public init(perBinding: Int, total: Int) {
        precondition(perBinding >= 1 && total >= perBinding, "pending-login caps must be positive, total ≥ per binding")
        self.perBinding = perBinding
        self.total = total
    }
}
