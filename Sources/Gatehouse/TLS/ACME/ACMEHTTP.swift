import GatehouseCore
import HTTP1
import TLSTransport

/// Why an ACME step failed, for the operator's log (never a key or a token).
enum ACMEError: Error, CustomStringConvertible, Equatable {
    /// The CA could not be reached or its answer not read.
    case transport(String)
    /// The CA answered something this client does not understand.
    case protocolError(String)
    /// The CA refused, with an RFC 7807 problem (`urn:ietf:params:acme:error:…`).
    case problem(status: Int, type: String, detail: String)
    /// An authorization or the order became invalid (a challenge failed).
    case invalid(String)

    var description: String {
        switch self {
        case .transport(let why): "the ACME server cannot be reached: \(why)"
        case .protocolError(let why): "unexpected ACME answer: \(why)"
        case .problem(let status, let type, let detail): "the ACME server refused (\(status) \(type)): \(detail)"
        case .invalid(let why): why
        }
    }

    var isBadNonce: Bool {
        if case .problem(_, let type, _) = self { return type == "urn:ietf:params:acme:error:badNonce" }
        return false
    }
}

/// One answer of the ACME server.
struct ACMEResponse: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]
}

/// How the ACME client reaches its server: one blocking exchange per call.
typealias ACMEExchange = @Sendable (_ method: String, _ url: String, _ body: [UInt8]?) throws(ACMEError) -> ACMEResponse

/// The real exchange: a new TLS connection per request (`BlockingHTTPS`), verified against the
/// configured bundle, `Connection: close`, the answer framed by its length or chunks.
enum ACMEHTTP {
    static func exchange(bundle: String, timeoutSeconds: Int = 30) -> ACMEExchange {
        { method, url, body throws(ACMEError) in
            let target: AbsoluteURL
            do { target = try AbsoluteURL(parsing: url) } catch { throw .protocolError("not a URL: \(url)") }
            guard target.isHTTPS else { throw .protocolError("the ACME server named a URL that is not https: \(url)") }
            var head = "\(method) \(target.path.isEmpty ? "/" : target.path)\(target.query.map { "?" + $0 } ?? "") HTTP/1.1\r\n"
            head += "Host: \(target.authority)\r\nUser-Agent: gatehouse-acme\r\nConnection: close\r\n"
            head += "Accept: application/json, application/pem-certificate-chain\r\n"
            if let body { head += "Content-Type: application/jose+json\r\nContent-Length: \(body.count)\r\n" }
            let raw: [UInt8]
            do {
                raw = try BlockingHTTPS.exchange(host: target.host, port: target.port, bundle: bundle,
                                                 request: Array((head + "\r\n").utf8) + (body ?? []), timeoutSeconds: timeoutSeconds)
            } catch {
                throw .transport("\(target.authority): \(error)")
            }
            return try parse(raw, method: method)
        }
    }

    /// The answer in `raw` (everything the server sent before closing).
    static func parse(_ raw: [UInt8], method: String) throws(ACMEError) -> ACMEResponse {
        var parser = ResponseHeadParser()
        let parsed: HeadParseResult<HTTPResponseHead>
        do { parsed = try raw.withUnsafeBytes { bytes throws(HTTPParseError) in try parser.parse(bytes) } } catch {
            throw .transport("malformed answer: \(error)")
        }
        guard case .complete(let head, let consumed) = parsed else { throw .transport("the answer ended inside its head") }
        let rest = Array(raw[consumed...])
        var body: [UInt8] = []
        if method == "HEAD" || head.status == 204 || head.status == 304 {
            body = []
        } else if head.headers["Transfer-Encoding"].map({ $0.lowercased().contains("chunked") }) == true {
            var decoder = ChunkedDecoder()
            do {
                _ = try rest.withUnsafeBytes { bytes throws(HTTPParseError) in
                    try decoder.decode(bytes) { body.append(contentsOf: $0) }
                }
            } catch { throw .transport("malformed chunked body: \(error)") }
            guard decoder.isComplete else { throw .transport("the chunked body ended early") }
        } else if let length = head.headers["Content-Length"].flatMap({ Int($0) }) {
            guard rest.count >= length else { throw .transport("the body ended after \(rest.count) of \(length) bytes") }
            body = Array(rest.prefix(length))
        } else {
            body = rest
        }
        return ACMEResponse(status: head.status, headers: head.headers, body: body)
    }
}
