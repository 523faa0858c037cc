import Synchronization

/// Told of each store operation (a span per operation when traces are exported). The store
/// knows nothing of traces: the observer decides whether an operation is recorded and under
/// which parent.
public protocol StoreOperationObserver: Sendable {
    /// A mark taken before the operation, handed back to `finished`; nil when it is not recorded.
    func starting() -> UInt64?
    /// `operation`: the store method, e.g. `loadSession`.
    func finished(_ operation: String, engine: SessionDatabaseEngine, mark: UInt64, failed: Bool)
}

/// The store's observer, set once the gateway has one (`observe(with:)`). Read once per operation:
/// unset, an operation costs one uncontended lock more than before.
public final class StoreOperations: Sendable {
    private let observer = Mutex<(any StoreOperationObserver)?>(nil)

    public init() {}

    public func observe(with observer: any StoreOperationObserver) {
        self.observer.withLock { $0 = observer }
    }

    var current: (any StoreOperationObserver)? { observer.withLock { $0 } }
}

/// A store whose operations can be observed (every engine's `SessionMaintenance`).
public protocol SessionOperationsObservable {
    var operations: StoreOperations { get }
}

extension SessionMaintenance: SessionOperationsObservable {}

extension SessionMaintenance {
    /// `sessionDatabase.read`, reported to the observer as `operation` (the caller's name).
    @discardableResult
    func observedRead<R: Sendable>(_ operation: StaticString = #function,
                                   _ body: (Connection) throws(Failure) -> R) throws(SessionStoreError) -> R {
        try observed(operation) { () throws(SessionStoreError) -> R in try sessionDatabase.read(body) }
    }

    /// `sessionDatabase.write`, reported to the observer as `operation` (the caller's name).
    @discardableResult
    func observedWrite<R: Sendable>(_ operation: StaticString = #function,
                                    _ body: (Connection) throws(Failure) -> R) throws(SessionStoreError) -> R {
        try observed(operation) { () throws(SessionStoreError) -> R in try sessionDatabase.write(body) }
    }

    private func observed<R>(_ operation: StaticString,
                             _ body: () throws(SessionStoreError) -> R) throws(SessionStoreError) -> R {
        guard let observer = operations.current, let mark = observer.starting() else { return try body() }
        let name = Self.methodName(operation)
        do {
            let result = try body()
            observer.finished(name, engine: sessionDatabase.engine, mark: mark, failed: false)
            return result
        } catch {
            observer.finished(name, engine: sessionDatabase.engine, mark: mark, failed: true)
            throw error
        }
    }

    /// `loadSession(id:now:)` → `loadSession`.
    static func methodName(_ function: StaticString) -> String {
        let text = function.description
        return String(text.prefix { $0 != "(" })
    }
}
