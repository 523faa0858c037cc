import Crypto
import Foundation
import HTTP1
import HTTPServer
import Synchronization

/// What the upstream saw of one proxied request (the echo's JSON body has the same shape).
struct EchoedRequest: Codable, Sendable {
    var method: String
    var path: String
    var query: String?
    /// Name/value pairs in arrival order (duplicates kept).
    var headers: [[String]]
    var bodyLength: Int
    var bodySHA256: String

    func values(_ name: String) -> [String] {
        headers.filter { $0.count == 2 && $0[0].lowercased() == name.lowercased() }.map { $0[1] }
    }
}

/// The upstream API behind the gateway in the tests. Routed as `/api=http://127.0.0.1:PORT`, so it
/// sees `/api/...` paths:
/// - `/api/sse`: five server-sent events, 200 ms apart;
/// - `/api/big?mib=N`: N MiB (Content-Length) of ``BigBody`` pieces;
/// - `/api/slow`: answers after 3 s;
/// - `/api/set-cookie`: an answer carrying `Set-Cookie` and a harmless header;
/// - anything else: a JSON echo of method, path, query, headers and body length/digest.
final class UpstreamTestAPI: TaskHTTPHandler {
    private let seen = Mutex<[EchoedRequest]>([])

    /// Every request received so far, in order.
    var requests: [EchoedRequest] { seen.withLock { $0 } }

    func handle(_ request: HTTPRequest, writer: any HTTPResponseWriter) async {
        let head = request.head
        var digest = SHA256()
        var length = 0
        do {
            while let piece = try await request.body.next() {
                digest.update(data: piece)
                length += piece.count
            }
        } catch {
            return await writer.respond(HTTPResponse(status: 400, body: "body: \(error)"))
        }
        let echoed = EchoedRequest(method: head.method, path: String(head.path), query: head.query.map(String.init),
                                   headers: head.headers.map { [$0.name, $0.value] }, bodyLength: length,
                                   bodySHA256: digest.finalize().map { String(format: "%02x", $0) }.joined())
        seen.withLock { $0.append(echoed) }
        switch head.path {
        case "/api/sse": await serverSentEvents(writer)
        case "/api/big": await big(query: head.query, writer)
        case "/api/slow":
            try? await Task.sleep(for: .seconds(3))
            await writer.respond(HTTPResponse(status: 200, headers: ["Content-Type": "text/plain"], body: "late\n"))
        case "/api/set-cookie":
            await writer.respond(HTTPResponse(status: 200, headers: [
                "Content-Type": "text/plain", "Set-Cookie": "upstream=1; Path=/", "X-Upstream": "kept",
            ], body: "ok\n"))
        default:
            let body = (try? JSONEncoder().encode(echoed)).map(Array.init) ?? []
            await writer.respond(HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: body))
        }
    }

    private func serverSentEvents(_ writer: any HTTPResponseWriter) async {
        do {
            try await writer.writeHead(HTTPResponseHead(status: 200, headers: [
                "Content-Type": "text/event-stream", "Cache-Control": "no-cache",
            ]), contentLength: nil)
            for n in 1...5 {
                try await writer.writeBody(Array("data: event \(n)\n\n".utf8))
                if n < 5 { try? await Task.sleep(for: .milliseconds(200)) }
            }
            try await writer.finish()
        } catch {
            writer.abort()
        }
    }

    private func big(query: Substring?, _ writer: any HTTPResponseWriter) async {
        let mib = query.flatMap { q in q.hasPrefix("mib=") ? Int(q.dropFirst(4)) : nil } ?? 1
        do {
            try await writer.writeHead(HTTPResponseHead(status: 200, headers: ["Content-Type": "application/octet-stream"]),
                                       contentLength: mib * BigBody.mebibyte)
            for index in 0..<(mib * BigBody.piecesPerMebibyte) {
                try await writer.writeBody(BigBody.piece(index))
            }
            try await writer.finish()
        } catch {
            writer.abort()
        }
    }
}

/// The `/api/big` body: 64 KiB pieces, each a fixed pattern stamped with its index, so a lost,
/// repeated or reordered piece changes the digest.
enum BigBody {
    static let pieceSize = 65_536
    static let mebibyte = 1 << 20
    static let piecesPerMebibyte = mebibyte / pieceSize
    private static let pattern: [UInt8] = (0..<pieceSize).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 8)) }

    static func piece(_ index: Int) -> [UInt8] {
        var piece = pattern
        withUnsafeBytes(of: UInt64(index).bigEndian) { stamp in
            for (offset, byte) in stamp.enumerated() { piece[offset] = byte }
        }
        return piece
    }

    static func sha256(mebibytes: Int) -> String {
        var digest = SHA256()
        for index in 0..<(mebibytes * piecesPerMebibyte) { digest.update(data: piece(index)) }
        return digest.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
