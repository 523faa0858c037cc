import GatehouseCore
import HTTPClient
import HTTP1
import HTTPServer

/// One exchange with an upstream through either transport: the JSON answer for a failure before
/// the upstream's head, and the relay of its answer after it (whole when it came whole, else
/// streamed with back-pressure).
enum UpstreamRelay {
    /// Sends `request` through `transport` and relays the answer to `writer`, every answer with the
    /// security headers (the caller's writer need not add them).
    static func forward(_ request: UpstreamRequest, body: any HTTPRequestBody, via transport: any UpstreamTransport,
                        span: CallSpan? = nil, context: GatewayContext, writer: any HTTPResponseWriter) async {
        // The production transport, called directly (see `UpstreamClient.exchangeDirectly`).
        if let client = transport as? UpstreamClient {
            return await forward(request, body: body, via: client, span: span, context: context, writer: writer)
        }
        let answer: any UpstreamAnswer
        do {
            answer = try await transport.exchange(request, body: body)
        } catch {
            return await answerFailure(error, span: span, context: context, writer: writer)
        }
        span?.end(status: answer.head.status)
        await relay(answer, method: request.method, context: context, writer: writer)
    }

    /// As above through the pooled client itself (no existential, no cast).
    static func forward(_ request: UpstreamRequest, body: any HTTPRequestBody, via client: UpstreamClient,
                        span: CallSpan? = nil, context: GatewayContext, writer: any HTTPResponseWriter) async {
        let response: UpstreamResponse
        do {
            response = try await client.exchangeDirectly(request, body: body)
        } catch {
            return await answerFailure(error, span: span, context: context, writer: writer)
        }
        span?.end(status: response.head.status)
        await relay(response, method: request.method, context: context, writer: writer)
    }

    /// The answer for a failed exchange; its span, if any, ends failed (at the time the failure was known).
    static func answerFailure(_ error: UpstreamError, span: CallSpan? = nil, context: GatewayContext,
                              writer: any HTTPResponseWriter) async {
        span?.end(status: nil, failed: true)
        await writer.respond(context.secure.response(failure(error, context: context)))
    }

    static func relay(_ answer: some UpstreamAnswer, method: String, context: GatewayContext,
                              writer: any HTTPResponseWriter) async {
        switch prepare(answer, method: method, context: context) {
        case .whole(let response):
            if writer.respondImmediately(response) { return }
            await writer.respond(response)
        case .streamed(let head):
            await stream(answer, head: head, framing: answer.framing, context: context, writer: writer)
        }
    }

    /// The browser's answer to an upstream answer whose head has arrived.
    enum Relayed {
        /// All of it, in one write.
        case whole(HTTPResponse)
        /// This head, then the body as it comes (`stream`).
        case streamed(HTTPResponseHead)
    }

    /// Decides `Relayed` without waiting for anything (the proxy's answer from the loop uses it too).
    static func prepare(_ answer: some UpstreamAnswer, method: String, context: GatewayContext) -> Relayed {
        // The security headers are added here, while this function owns the only copy of the
        // fields: the secured writer then finds them present and adds (and copies) nothing.
        var outgoing = BrowserAnswerHead.make(status: answer.head.status, upstreamHeaders: answer.head.headers,
                                              framing: answer.framing, secure: context.secure,
                                              memo: context.speedLayer.isOn ? answer.connectionMemo { BrowserHeadMemo() } : nil).head
        // Small answers usually arrive whole with their head: relay them in one write. The client
        // decided the framing and the length to announce (for HEAD, what GET would send).
        guard let body = answer.wholeBodyIfBuffered() else { return .streamed(outgoing) }
        if method == "HEAD", let length = answer.framing.announcedLength {
            outgoing.headers.set("Content-Length", String(length))
        }
        return .whole(HTTPResponse(status: outgoing.status, headers: outgoing.headers, body: body))
    }

    /// The answer for an exchange that failed before any byte of the upstream's head
    /// (timeouts `504`, an unreachable upstream `502`, the browser's body `413`/`400`).
    static func failure(_ error: UpstreamError, context: GatewayContext) -> HTTPResponse {
        switch error {
        case .connectTimeout, .firstByteTimeout:
            context.metrics.upstreamError(kind: "timeout")
            context.logger.warning("upstream timed out", metadata: ["error": "\(error)"])
            return HTTPResponse.jsonError(status: 504, error: "upstream_timeout",
                                          description: "The upstream did not answer in time.")
        case .requestBody(.tooLarge(let limit)):
            return HTTPResponse.jsonError(status: 413, error: "payload_too_large",
                                          description: "The request body is larger than \(limit) bytes.")
        case .requestBody:
            return HTTPResponse.jsonError(status: 400, error: "invalid_request_body",
                                          description: "The request body could not be read.")
        case .invalidRequest:
            context.logger.warning("upstream request refused", metadata: ["error": "\(error)"])
            return HTTPResponse.jsonError(status: 400, error: "invalid_path",
                                          description: "The path cannot be routed.")
        default:
            context.metrics.upstreamError(kind: "unreachable")
            context.logger.warning("upstream failed", metadata: ["error": "\(error)"])
            return HTTPResponse.jsonError(status: 502, error: "upstream_unreachable",
                                          description: "The upstream could not be reached.")
        }
    }

    /// Writes the head, then each piece of the body as the browser takes it (`writeBody` waits while
    /// the browser is slower: back-pressure), then the end.
    ///
    /// Never more than `framing.bodyLimit` bytes reach the browser: a body longer than its
    /// announced length (or any body on a bodiless answer) would be read by the browser as the
    /// start of its next answer on the keep-alive connection, so the connection is cut instead.
    static func stream(_ body: some UpstreamBody, head: HTTPResponseHead, framing: UpstreamResponseFraming,
                       context: GatewayContext, writer: any HTTPResponseWriter) async {
        do {
            try await writer.writeHead(head, contentLength: framing.announcedLength)
        } catch {
            return body.discard()
        }
        var room = framing.bodyLimit ?? .max
        while true {
            let piece: [UInt8]?
            do {
                piece = try await body.nextBodyPiece()
            } catch {
                // Mid-body failure (the upstream, or the browser's own upload): the head is gone, so
                // the only honest signal is a cut connection.
                if case .requestBody = error {} else { context.metrics.upstreamError(kind: "body") }
                context.logger.warning("upstream body failed", metadata: ["error": "\(error)"])
                return writer.abort()
            }
            guard let piece else { break }
            guard piece.count <= room else {
                context.metrics.upstreamError(kind: "body")
                context.logger.warning("upstream body longer than announced", metadata: [
                    "announced": "\(framing.bodyLimit ?? 0)"])
                body.discard()
                return writer.abort()
            }
            room -= piece.count
            do { try await writer.writeBody(piece) } catch {
                return body.discard()
            }
        }
        try? await writer.finish()
    }
}
