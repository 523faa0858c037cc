import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GatehouseCore
import HTTPClient
import HTTPServer

/// `https://` upstreams go through URLSession (libcurl with the system's TLS and CA store). Unlike the
/// `http://` hot path this buffers each body (bounded by GATEHOUSE_MAX_BODY); redirects are passed
/// to the browser, never followed.
enum TLSUpstream {
    static func forward(_ request: UpstreamRequest, body: any HTTPRequestBody, context: GatewayContext,
                        writer: any HTTPResponseWriter) async {
        let bytes: [UInt8]
        do {
            bytes = try await body.collect(limit: context.configuration.maxBody)
        } catch {
            if case .tooLarge(let limit) = error {
                return await writer.respond(HTTPResponse.jsonError(status: 413, error: "payload_too_large",
                                                                   description: "The request body is larger than \(limit) bytes."))
            }
            return await writer.respond(HTTPResponse.jsonError(status: 400, error: "invalid_request_body",
                                                               description: "The request body could not be read."))
        }
        let host = request.host.contains(":") ? "[\(request.host)]" : request.host
        guard let url = URL(string: "https://\(host):\(request.port)\(request.target)") else {
            return await writer.respond(HTTPResponse.jsonError(status: 400, error: "invalid_path",
                                                               description: "The path cannot be routed."))
        }
        var urlRequest = URLRequest(url: url, timeoutInterval: TimeInterval(context.configuration.upstreamTimeout))
        urlRequest.httpMethod = request.method
        for field in request.headers where !field.name.asciiCaseInsensitiveEquals("Content-Length") {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name)
        }
        if !bytes.isEmpty { urlRequest.httpBody = Data(bytes) }
        let session = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        do {
            let (data, response) = try await session.data(for: urlRequest)
            guard let http = response as? HTTPURLResponse else {
                return await writer.respond(HTTPResponse.jsonError(status: 502, error: "upstream_unreachable",
                                                                   description: "The upstream answer was not HTTP."))
            }
            var headers = HTTPHeaders()
            for (name, value) in http.allHeaderFields {
                if let name = name as? String, let value = value as? String { headers.add(name, value) }
            }
            // URLSession has already decoded any content coding.
            headers.remove("Content-Encoding")
            await writer.respond(HTTPResponse(status: http.statusCode,
                                              headers: ProxyHeaderPolicy.downstreamResponseHeaders(from: headers),
                                              body: Array(data)))
        } catch {
            let timedOut = (error as? URLError)?.code == .timedOut
            context.metrics.upstreamError(kind: timedOut ? "timeout" : "unreachable")
            await writer.respond(HTTPResponse.jsonError(
                status: timedOut ? 504 : 502, error: timedOut ? "upstream_timeout" : "upstream_unreachable",
                description: timedOut ? "The upstream did not answer in time." : "The upstream could not be reached."))
        }
    }
}

private final class NoRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
