import EventLoops
import GatehouseCore
import HTTP1
import HTTPServer
import Synchronization

/// The server's handler across configuration reloads: each event loop asks its own copy of the
/// current `Gateway` (`loopHandler(for:)`), and a reload hands every loop a copy of the new one on
/// that loop. A request is decided by the gateway its loop held when it arrived and keeps that
/// gateway's context (its routes, providers, caches) to its end; connections stay open throughout.
public final class GatewaySwitch: HTTPHandler {
    private struct State {
        var current: Gateway
        var loops: [(loop: EventLoop, handler: LoopGateway)] = []
    }

    private let state: Mutex<State>

    public init(_ gateway: Gateway) {
        state = Mutex(State(current: gateway))
    }

    /// The gateway new requests meet (once every loop has switched).
    public var current: Gateway { state.withLock { $0.current } }

    public func loopHandler(for loop: EventLoop) -> any HTTPHandler {
        state.withLock { state in
            let handler = LoopGateway(state.current.loopHandler(for: loop))
            state.loops.append((loop, handler))
            return handler
        }
    }

    /// Requests that arrive on a loop after its turn are decided by `gateway`; each loop switches
    /// on its own thread, between two requests. Returns once every loop has.
    public func switchTo(_ gateway: Gateway) async {
        let loops = state.withLock { state in
            state.current = gateway
            return state.loops
        }
        for (loop, handler) in loops {
            let copy = gateway.loopHandler(for: loop)
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                loop.execute {
                    handler.handler = copy
                    done.resume()
                }
            }
        }
    }

    /// Runs `body` with every loop that asked for a handler.
    func forEachLoop(_ body: (EventLoop) -> Void) {
        for (loop, _) in state.withLock({ $0.loops }) { body(loop) }
    }

    public func answer(_ head: HTTPRequestHead, _ connection: RequestConnection) -> HandlerAnswer {
        current.answer(head, connection)
    }

    /// `Gateway.routeClass(of:)` of the current gateway.
    public func routeClass(of path: Substring) -> RouteClass {
        current.routeClass(of: path)
    }

    /// `Gateway.routeTemplate(of:)` of the current gateway.
    public func routeTemplate(of path: Substring) -> String? {
        current.routeTemplate(of: path)
    }
}

/// One loop's gateway: read and replaced only on that loop's thread.
final class LoopGateway: HTTPHandler, @unchecked Sendable {
    var handler: any HTTPHandler

    init(_ handler: any HTTPHandler) {
        self.handler = handler
    }

    func answer(_ head: HTTPRequestHead, _ connection: RequestConnection) -> HandlerAnswer {
        handler.answer(head, connection)
    }
}
