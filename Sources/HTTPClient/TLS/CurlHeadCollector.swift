import HTTP1

/// Builds the final response head from the header lines libcurl hands to its header callback.
///
/// libcurl passes every line of every head it reads, one complete line per call: interim `1xx`
/// heads (`100 Continue`, `103 Early Hints`) come first, each ended by an empty line, then the final
/// head, then (for a chunked body) trailer lines. Only the final head counts; interim heads are
/// dropped and trailers ignored (the browser-facing framing is redone by the server anyway).
struct CurlHeadCollector {
    /// The final head, once its closing empty line has arrived.
    private(set) var head: HTTPResponseHead?
    /// The version of the final head's status line (an HTTP/1.0 answer may not use Transfer-Encoding).
    private(set) var version: HTTPVersion = .http1_1
    private var status: Int?
    private var fields: [(name: String, value: String)] = []

    /// Takes one raw line (with its CRLF). Returns true when this line completed the final head.
    mutating func consume(_ line: UnsafeRawBufferPointer) -> Bool {
        guard head == nil else { return false }
        var end = line.count
        while end > 0, line[end - 1] == UInt8(ascii: "\n") || line[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let bytes = UnsafeRawBufferPointer(rebasing: line[0..<end])

        if bytes.isEmpty {
            guard let status else { return false }
            if (100..<200).contains(status) && status != 101 {
                // An interim head: the final one follows. (A `101` is final: libcurl takes it as
                // the answer when no upgrade was asked for, and the client refuses it.)
                self.status = nil
                fields.removeAll()
                return false
            }
            head = HTTPResponseHead(status: status, headers: HTTPHeaders(fields.map { ($0.name, $0.value) }))
            fields.removeAll()
            return true
        }
        if bytes.starts(with: Self.httpPrefix) {
            status = Self.statusCode(of: bytes)
            version = bytes.starts(with: Self.http10Prefix) ? .http1_0 : .http1_1
            fields.removeAll()
            return false
        }
        guard status != nil else { return false }
        if bytes[0] == UInt8(ascii: " ") || bytes[0] == UInt8(ascii: "\t") {
            // obs-fold (RFC 9112 §5.2): the line continues the previous field's value.
            guard !fields.isEmpty else { return false }
            let more = String(decoding: bytes, as: UTF8.self).trimmingASCIIWhitespace()
            fields[fields.count - 1].value += " " + more
            return false
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<colon]), as: UTF8.self)
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(colon + 1)...]), as: UTF8.self)
        fields.append((name, String(value.trimmingASCIIWhitespace())))
        return false
    }

    private static let httpPrefix = Array("HTTP/".utf8)
    private static let http10Prefix = Array("HTTP/1.0 ".utf8)

    /// The three-digit code after the first space of a status line (`HTTP/1.1 200 OK`, `HTTP/2 200`).
    private static func statusCode(of line: UnsafeRawBufferPointer) -> Int? {
        guard let space = line.firstIndex(of: UInt8(ascii: " ")), space + 4 <= line.count else { return nil }
        var code = 0
        for byte in line[(space + 1)..<(space + 4)] {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            code = code * 10 + Int(byte - UInt8(ascii: "0"))
        }
        guard code >= 100 else { return nil }
        return code
    }
}
