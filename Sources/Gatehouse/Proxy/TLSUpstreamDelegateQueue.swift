import Foundation

/// The delegate queue of one `https://` exchange's URLSession: serial, and `addOperation` blocks
/// while the exchange's buffer is full (see `TLSUpstreamExchange` for why this is the back-pressure
/// point on swift-corelibs-foundation).
final class TLSUpstreamDelegateQueue: OperationQueue, @unchecked Sendable {
    private let exchange: TLSUpstreamExchange

    init(exchange: TLSUpstreamExchange) {
        self.exchange = exchange
        super.init()
        maxConcurrentOperationCount = 1
        name = "gatehouse.tls-upstream"
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        exchange.waitForRoom()
        let exchange = exchange
        super.addOperation {
            block()
            exchange.operationRan()
        }
    }
}
