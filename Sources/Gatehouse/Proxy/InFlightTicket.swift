import GatehouseCore
import HTTP1

/// One admitted API call on a route (`InFlightCount`): it leaves the count when the last holder of
/// the ticket lets go — the task's work, or the loop relay and the tasks it continues in — whether
/// the call ran to its end or was dropped with its connection, so no path can leak a slot.
final class InFlightTicket: Sendable {
    private let count: InFlightCount

    /// nil when `limit` calls are in flight on the route already.
    init?(_ count: InFlightCount, limit: Int) {
        guard count.enter(limit: limit) else { return nil }
        self.count = count
    }

    deinit { count.leave() }

    /// The answer to a call past the bound: `503` at once, before the session, the provider or
    /// the upstream is touched.
    static let refusal: HTTPResponse = {
        var response = HTTPResponse.jsonError(status: 503, error: "overloaded",
                                              description: "Too many calls to this API are in flight; retry shortly.")
        response.headers.set("Retry-After", "1")
        return response
    }()
}
