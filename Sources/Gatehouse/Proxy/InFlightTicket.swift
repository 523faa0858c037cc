import GatehouseCore
import HTTP1

/// One admitted API call on a route (`InFlightCount`) that goes on in a task: it leaves the count
/// when the last holder lets go of it (the task's work, run or dropped with its connection), so no
/// path can leak a slot. A call relayed from the loop needs no ticket: its `LoopRelay`, already an
/// object of its own, leaves the count the same way.
final class InFlightTicket: Sendable {
    private let count: InFlightCount
    private let client: UInt64

    /// For a call of `client` that `count` has already admitted (`InFlightCount.enter`).
    init(admitted count: InFlightCount, client: UInt64) {
        (self.count, self.client) = (count, client)
    }

    deinit { count.leave(client: client) }

    /// The answer to a call past the bound: `503` at once, before the session, the provider or
    /// the upstream is touched.
    static let refusal: HTTPResponse = {
        var response = HTTPResponse.jsonError(status: 503, error: "overloaded",
                                              description: "Too many calls to this API are in flight; retry shortly.")
        response.headers.set("Retry-After", "1")
        return response
    }()
}
