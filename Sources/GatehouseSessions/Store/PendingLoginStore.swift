/// The pending-login role of a store: the state between `/login` and `/callback`, each usable once.
public protocol PendingLoginStore: Sendable {
    /// Stores a pending login under its state hash.
    func savePendingLogin(_ login: PendingLogin) throws(SessionStoreError)

    /// Removes and returns the pending login for `stateHash`: usable once. Returns nil when it is
    /// missing or expired at `now` (an expired one is still removed).
    func takePendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin?

    /// The pending login for `stateHash`, left in place: how its request object is served to the
    /// provider (`GATEHOUSE_REQUEST_OBJECT=reference`) before the callback takes it. Nil when it is
    /// missing or expired at `now`.
    func pendingLogin(stateHash: String, now: Int64) throws(SessionStoreError) -> PendingLogin?

}
