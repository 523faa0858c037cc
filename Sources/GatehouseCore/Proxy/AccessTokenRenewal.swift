/// When an access token is renewed: a little before it expires, so that no request carries a token
/// that dies on its way to the upstream. Shared by the user's refresh (`TokenRefresher`) and the
/// gateway's client-credentials cache (`ClientTokenCache`).
public enum AccessTokenRenewal {
    /// True when `now` is within the margin before `expiresAt`: the configured `margin`
    /// (`GATEHOUSE_REFRESH_MARGIN`), or a tenth of the token's lifetime when that is smaller (a 60 s
    /// margin would renew a 30 s token on every request). A token without an expiry is never due.
    public static func isDue(expiresAt: Int64?, lifetime: Int64?, margin: Int64, now: Int64) -> Bool {
        guard let dueAt = dueAt(expiresAt: expiresAt, lifetime: lifetime, margin: margin) else { return false }
        return now >= dueAt
    }

    /// The first second at which `isDue` holds; nil for a token without an expiry.
    public static func dueAt(expiresAt: Int64?, lifetime: Int64?, margin: Int64) -> Int64? {
        guard let expiresAt else { return nil }
        var effective = margin
        if let lifetime, lifetime > 0 { effective = min(margin, lifetime / 10) }
        return expiresAt - effective
    }
}
