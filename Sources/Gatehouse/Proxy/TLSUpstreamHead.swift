import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GatehouseCore
import HTTPServer

/// The browser-facing head of an `https://` upstream's answer, and its framing.
struct TLSUpstreamHead: Equatable {
    var head: HTTPResponseHead
    /// The upstream's `Content-Length` when the body reaches us unchanged; nil means chunked.
    var contentLength: Int?

    static func make(from response: HTTPURLResponse) -> TLSUpstreamHead {
        var headers = HTTPHeaders()
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers.add(name, value) }
        }
        return make(status: response.statusCode, upstreamHeaders: headers)
    }

    /// Pure part: URLSession decodes any content coding it knows, so an encoded answer loses both
    /// `Content-Encoding` and its (encoded) `Content-Length`.
    static func make(status: Int, upstreamHeaders: HTTPHeaders) -> TLSUpstreamHead {
        var headers = upstreamHeaders
        var length: Int? = nil
        let codings = headers.tokens("Content-Encoding").filter { $0 != "identity" }
        if !codings.isEmpty {
            headers.remove("Content-Encoding")
        } else if !headers.contains("Transfer-Encoding"), let declared = headers["Content-Length"],
                  let n = Int(declared.trimmingASCIIWhitespace()), n >= 0 {
            length = n
        }
        return TLSUpstreamHead(head: HTTPResponseHead(status: status,
                                                      headers: ProxyHeaderPolicy.downstreamResponseHeaders(from: headers)),
                               contentLength: length)
    }
}
