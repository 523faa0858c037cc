import Foundation

/// How the request body is sent.
public enum TestRequestBody: Sendable {
    case none
    case bytes([UInt8])
    /// `Transfer-Encoding: chunked`, one chunk per element.
    case chunked([[UInt8]])
}

/// One request per connection (`Connection: close`) on a `BlockingSocket`: no redirects followed, no
/// cookies managed, so the test sees exactly what the server sent.
///
/// Each call runs on its own thread, so a blocking read never occupies a thread of Swift's
/// cooperative pool (the servers under test may need that pool while the client waits).
public enum RawHTTPClient {
    /// Sends one request to 127.0.0.1:`port`; `timeoutSeconds` bounds each wait for the server.
    /// - Parameter onBodyPiece: sees each piece of the decoded body as it arrives (streaming tests);
    ///   when `collectBody` is false the pieces are not kept in the returned response.
    public static func send(port: Int, method: String, target: String, headers: [(String, String)] = [],
                            body: TestRequestBody = .none, timeoutSeconds: Int = 20, collectBody: Bool = true,
                            onBodyPiece: (@Sendable ([UInt8]) -> Void)? = nil) async throws -> RawResponse {
        try await onOwnThread {
            let socket = try BlockingSocket(port: port, sendTimeout: timeoutSeconds)
            defer { socket.close() }
            try socket.send(encode(port: port, method: method, target: target, headers: headers, body: body))
            return try socket.readResponse(method: method, timeout: Double(timeoutSeconds), timeoutIsIdle: true,
                                           collectBody: collectBody, onBodyPiece: onBodyPiece)
        }
    }

    /// Runs blocking work on a new thread and resumes the caller with its result.
    public static func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let thread = Thread { continuation.resume(with: Result { try work() }) }
            thread.start()
        }
    }

    /// The request's bytes: `Host` unless given, the headers, `Connection: close`, then the body framed
    /// as asked (a given `Content-Length` is kept, even a wrong one).
    static func encode(port: Int, method: String, target: String, headers: [(String, String)],
                       body: TestRequestBody) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\n"
        let names = Set(headers.map { $0.0.lowercased() })
        if !names.contains("host") { head += "Host: 127.0.0.1:\(port)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Connection: close\r\n"
        switch body {
        case .none:
            head += "\r\n"
            return Array(head.utf8)
        case .bytes(let bytes):
            if !names.contains("content-length") { head += "Content-Length: \(bytes.count)\r\n" }
            head += "\r\n"
            return Array(head.utf8) + bytes
        case .chunked(let pieces):
            head += "Transfer-Encoding: chunked\r\n\r\n"
            var out = Array(head.utf8)
            for piece in pieces where !piece.isEmpty {
                out += Array((String(piece.count, radix: 16) + "\r\n").utf8) + piece + Array("\r\n".utf8)
            }
            return out + Array("0\r\n\r\n".utf8)
        }
    }
}
