#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTP1

/// A response as the test client read it.
struct TestResponse: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object (nil when it is not one).
    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    var location: String? { headers["Location"] }

    /// Every `Set-Cookie` value whose cookie is called `name`.
    func setCookies(named name: String) -> [String] {
        headers.values("Set-Cookie").filter { $0.hasPrefix(name + "=") }
    }
}

/// How the request body is sent.
enum TestRequestBody: Sendable {
    case none
    case bytes([UInt8])
    /// `Transfer-Encoding: chunked`, one chunk per element.
    case chunked([[UInt8]])
}

enum RawHTTPError: Error, CustomStringConvertible {
    case socket(String)
    case malformed(String)
    case timedOut

    var description: String {
        switch self {
        case .socket(let why): "socket: \(why)"
        case .malformed(let why): "malformed response: \(why)"
        case .timedOut: "timed out"
        }
    }
}

/// A tiny blocking HTTP/1.1 client on a raw socket: one request per connection (`Connection: close`),
/// no redirects followed, no cookies managed — the test sees exactly what the gateway sent.
///
/// Each call runs on its own thread, so a blocking read never occupies a thread of Swift's
/// cooperative pool (the servers under test may need that pool while the client waits).
enum RawHTTPClient {
    /// Sends one request to 127.0.0.1:`port`.
    /// - Parameter onBodyPiece: sees each piece of the decoded body as it arrives (streaming tests);
    ///   when `collectBody` is false the pieces are not kept in the returned response.
    static func send(port: Int, method: String, target: String, headers: [(String, String)] = [],
                     body: TestRequestBody = .none, timeoutSeconds: Int = 20, collectBody: Bool = true,
                     onBodyPiece: (@Sendable ([UInt8]) -> Void)? = nil) async throws -> TestResponse {
        try await onOwnThread {
            try exchange(port: port, method: method, target: target, headers: headers, body: body,
                         timeoutSeconds: timeoutSeconds, collectBody: collectBody, onBodyPiece: onBodyPiece)
        }
    }

    /// Runs blocking work on a new thread and resumes the caller with its result.
    static func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let thread = Thread { continuation.resume(with: Result { try work() }) }
            thread.start()
        }
    }

    private static func exchange(port: Int, method: String, target: String, headers: [(String, String)],
                                 body: TestRequestBody, timeoutSeconds: Int, collectBody: Bool,
                                 onBodyPiece: (@Sendable ([UInt8]) -> Void)?) throws -> TestResponse {
        let fd = try connectLoopback(port: port, timeoutSeconds: timeoutSeconds)
        defer { close(fd) }
        var head = "\(method) \(target) HTTP/1.1\r\n"
        let names = Set(headers.map { $0.0.lowercased() })
        if !names.contains("host") { head += "Host: 127.0.0.1:\(port)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Connection: close\r\n"
        var out = [UInt8]()
        switch body {
        case .none:
            head += "\r\n"
            out = Array(head.utf8)
        case .bytes(let bytes):
            if !names.contains("content-length") { head += "Content-Length: \(bytes.count)\r\n" }
            head += "\r\n"
            out = Array(head.utf8) + bytes
        case .chunked(let pieces):
            head += "Transfer-Encoding: chunked\r\n\r\n"
            out = Array(head.utf8)
            for piece in pieces where !piece.isEmpty {
                out += Array((String(piece.count, radix: 16) + "\r\n").utf8) + piece + Array("\r\n".utf8)
            }
            out += Array("0\r\n\r\n".utf8)
        }
        try writeAll(fd, out)

        var buffer = [UInt8]()
        var parser = ResponseHeadParser()
        var parsedHead: HTTPResponseHead?
        var consumed = 0
        while parsedHead == nil {
            let more = try readSome(fd)
            if more.isEmpty { throw RawHTTPError.malformed("connection closed before the head ended") }
            buffer += more
            let result: HeadParseResult<HTTPResponseHead>
            do {
                result = try buffer.withUnsafeBytes { raw throws(HTTPParseError) in try parser.parse(raw) }
            } catch {
                throw RawHTTPError.malformed("\(error)")
            }
            if case .complete(let parsed, let used) = result {
                if (100...199).contains(parsed.status) {
                    buffer.removeFirst(used)
                    parser.reset()
                    continue
                }
                parsedHead = parsed
                consumed = used
            }
        }
        guard let responseHead = parsedHead else { throw RawHTTPError.malformed("no head") }
        let framing: BodyFraming
        do {
            framing = try BodyFramingRules.response(responseHead, requestMethod: method, version: parser.lastVersion)
        } catch {
            throw RawHTTPError.malformed("framing: \(error)")
        }
        var collected = [UInt8]()
        func deliver(_ piece: [UInt8]) {
            guard !piece.isEmpty else { return }
            onBodyPiece?(piece)
            if collectBody { collected += piece }
        }
        var rest = Array(buffer[consumed...])
        switch framing {
        case .none:
            break
        case .contentLength(let length):
            var remaining = length
            let first = Array(rest.prefix(remaining))
            remaining -= first.count
            deliver(first)
            while remaining > 0 {
                let more = try readSome(fd)
                if more.isEmpty { throw RawHTTPError.malformed("body ended \(remaining) bytes early") }
                let take = Array(more.prefix(remaining))
                remaining -= take.count
                deliver(take)
            }
        case .chunked:
            var decoder = ChunkedDecoder()
            while true {
                if !rest.isEmpty {
                    var pieces: [[UInt8]] = []
                    do {
                        _ = try rest.withUnsafeBytes { raw throws(HTTPParseError) in
                            try decoder.decode(raw) { pieces.append(Array($0)) }
                        }
                    } catch {
                        throw RawHTTPError.malformed("chunked: \(error)")
                    }
                    deliver(pieces.flatMap { $0 })
                }
                if decoder.isComplete { break }
                rest = try readSome(fd)
                if rest.isEmpty { throw RawHTTPError.malformed("chunked body cut short") }
            }
        case .untilClose:
            deliver(rest)
            while true {
                let more = try readSome(fd)
                if more.isEmpty { break }
                deliver(more)
            }
        }
        return TestResponse(status: responseHead.status, headers: responseHead.headers, body: collected)
    }

    private static func connectLoopback(port: Int, timeoutSeconds: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError.socket("socket: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            let code = errno
            close(fd)
            throw RawHTTPError.socket("connect to port \(port): errno \(code)")
        }
        return fd
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RawHTTPError.socket("send: errno \(errno)")
            }
            offset += n
        }
    }

    /// Up to 64 KiB; empty at end of stream.
    private static func readSome(_ fd: Int32) throws -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n >= 0 { return Array(chunk[..<n]) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw RawHTTPError.timedOut }
            // A reset after the server answered and closed counts as the end of the stream.
            if errno == ECONNRESET { return [] }
            throw RawHTTPError.socket("recv: errno \(errno)")
        }
    }
}
