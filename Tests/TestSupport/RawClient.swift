import Dispatch
import HTTP1

/// A test client over a raw POSIX socket. Every wait is bounded by a deadline, so a server bug shows
/// up as a failed expectation rather than a hung suite.
///
/// The socket calls block, so they run on the client's own dispatch queue: blocking the
/// cooperative pool (one thread per core) would stall the other tests' tasks and the server's
/// shutdown task, and turn timing checks into noise.
public final class RawClient: @unchecked Sendable {
    private let socket: BlockingSocket
    private let queue = DispatchQueue(label: "test.raw-client")

    public init(port: Int, host: String = "127.0.0.1", receiveBuffer: Int32? = nil) async throws {
        let queue = self.queue
        socket = try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try BlockingSocket(port: port, host: host, receiveBuffer: receiveBuffer) })
            }
        }
    }

    public var fd: Int32 { socket.fd }
    public var pending: [UInt8] { socket.pending }
    public var sawEOF: Bool { socket.sawEOF }

    private func run<T: Sendable>(_ body: @escaping @Sendable (BlockingSocket) throws -> T) async throws -> T {
        let socket = self.socket
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body(socket) }) }
        }
    }

    public func send(_ bytes: [UInt8]) async throws { try await run { try $0.send(bytes) } }
    public func send(_ text: String) async throws { try await send(Array(text.utf8)) }
    public func shutdownWrite() { socket.shutdownWrite() }
    public func close() { socket.close() }

    @discardableResult
    public func receiveOnce(timeout: Double, maximum: Int = 64 * 1024) async throws -> [UInt8]? {
        try await run { try $0.receiveOnce(timeout: timeout, maximum: maximum) }
    }

    public func waitForClose(timeout: Double) async throws -> Bool {
        try await run { try $0.waitForClose(timeout: timeout) }
    }

    public func readResponse(method: String = "GET", timeout: Double = 5, skipInterim: Bool = true) async throws -> RawResponse {
        try await run { try $0.readResponse(method: method, timeout: timeout, skipInterim: skipInterim) }
    }
}
