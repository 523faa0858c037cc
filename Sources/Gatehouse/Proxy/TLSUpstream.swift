import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GatehouseCore
import HTTPClient
import HTTPServer

/// `https://` upstreams go through URLSession (libcurl with the system's TLS and CA store);
/// redirects are passed to the browser, never followed.
///
/// - The response streams: the head is written as soon as URLSession has it, then each piece as it
///   arrives, with back-pressure (at most `bufferLimit` bytes plus a few queued 16 KiB pieces wait
///   for a slow browser; see `TLSUpstreamExchange`). Server-sent events pass as they come.
/// - The request body is still **buffered** (bounded by GATEHOUSE_MAX_BODY, `413` beyond):
///   swift-corelibs-foundation reads a streamed body (`httpBodyStream`, `needNewBodyStream`) on the
///   session's work queue and ends it at the first moment no byte is available, so an upload that
///   arrives from the browser piece by piece cannot be fed to it reliably.
/// - Timeouts: the first response byte must come within GATEHOUSE_UPSTREAM_TIMEOUT (`504`). After
///   the head, URLSession's `timeoutInterval` acts as an idle timer (corelibs re-arms it on every
///   libcurl read/write callback), set to `bodyIdleTimeout`, so a long SSE stream lives as long as
///   something arrives at least that often.
/// - URLSession decodes gzip/deflate/br/zstd bodies: for an encoded answer `Content-Encoding` and
///   `Content-Length` are dropped and the decoded body is sent chunked.
enum TLSUpstream {
    /// Bytes received from the upstream and not yet written to the browser before libcurl stops reading.
    static let bufferLimit = 4 << 20
    /// Longest silence in an upstream body before the exchange is cut (the `http://` client's default).
    static let bodyIdleTimeout: TimeInterval = 300

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
        let firstByteTimeout = max(1, context.configuration.upstreamTimeout)
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData,
                                    timeoutInterval: max(bodyIdleTimeout, TimeInterval(firstByteTimeout)))
        urlRequest.httpMethod = request.method
        for field in request.headers where !field.name.asciiCaseInsensitiveEquals("Content-Length") {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name)
        }
        if !bytes.isEmpty { urlRequest.httpBody = Data(bytes) }

        let exchange = TLSUpstreamExchange(limit: bufferLimit)
        let session = URLSession(configuration: sessionConfiguration(), delegate: exchange,
                                 delegateQueue: TLSUpstreamDelegateQueue(exchange: exchange))
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: urlRequest)
        exchange.attach(task)
        task.resume()
        let deadline = Task {
            try? await Task.sleep(for: .seconds(firstByteTimeout))
            if !Task.isCancelled { exchange.firstByteDeadlinePassed() }
        }
        let first = await exchange.next()
        deadline.cancel()

        guard case .head(let response) = first else {
            exchange.stop()
            let timedOut: Bool
            if case .failed(let timeout, let description) = first {
                timedOut = timeout
                context.logger.warning("upstream failed", metadata: ["error": "\(description)"])
            } else {
                timedOut = false
            }
            context.metrics.upstreamError(kind: timedOut ? "timeout" : "unreachable")
            return await writer.respond(HTTPResponse.jsonError(
                status: timedOut ? 504 : 502, error: timedOut ? "upstream_timeout" : "upstream_unreachable",
                description: timedOut ? "The upstream did not answer in time." : "The upstream could not be reached."))
        }
        await relay(response, exchange: exchange, context: context, writer: writer)
    }

    private static func relay(_ response: HTTPURLResponse, exchange: TLSUpstreamExchange, context: GatewayContext,
                              writer: any HTTPResponseWriter) async {
        let framing = TLSUpstreamHead.make(from: response)
        do {
            try await writer.writeHead(framing.head, contentLength: framing.contentLength)
        } catch {
            return exchange.stop()
        }
        while true {
            switch await exchange.next() {
            case .body(let piece):
                do { try await writer.writeBody(piece) } catch {
                    return exchange.stop()
                }
            case .finished:
                try? await writer.finish()
                return
            case .failed(_, let description):
                // Mid-body failure: the head is gone, so the only honest signal is a cut connection.
                context.metrics.upstreamError(kind: "body")
                context.logger.warning("upstream body failed", metadata: ["error": "\(description)"])
                return writer.abort()
            case .head:
                continue
            }
        }
    }

    private static func sessionConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.httpCookieStorage = nil
        configuration.urlCredentialStorage = nil
        return configuration
    }
}
