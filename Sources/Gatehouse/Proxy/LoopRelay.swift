import GatehouseCore
import HTTPClient
import HTTPServer

/// The upstream's answer to an API call sent from the loop (`ApiProxy.forwardOnLoop`), relayed
/// from the upstream socket's readiness callback: a whole answer in the same turn of the loop,
/// without a task. Anything else — a head still incomplete, a body to stream, a stale connection,
/// a timeout — continues in a task exactly as `ApiProxy.forward` would have (`UpstreamCall.finish`,
/// `UpstreamRelay`): the same answers, limits and errors.
final class LoopRelay: UpstreamCallReceiver, @unchecked Sendable {
    private let call: UpstreamCall
    private let method: String
    private let context: GatewayContext
    private let writer: any HTTPResponseWriter
    private let completion: HandlerCompletion
    /// The count that admitted the call: left when this relay goes, i.e. once the answer is relayed
    /// (here, or by the tasks it continues in, which hold the relay until they end).
    private let admittedOn: InFlightCount
    private let client: UInt64
    /// A DPoP call's second chance when the upstream asks for a new nonce (`ApiProxy`).
    private let nonceRetry: DPoPNonceRetry?
    /// The call's span, when the request's spans are recorded: ended when the upstream's head is in.
    private let span: CallSpan?

    init(call: consuming UpstreamCall, method: String, context: GatewayContext, writer: any HTTPResponseWriter,
         completion: HandlerCompletion, admittedOn: InFlightCount, client: UInt64, nonceRetry: DPoPNonceRetry? = nil,
         span: CallSpan? = nil) {
        self.call = call
        self.span = span
        (self.method, self.context, self.writer) = (method, context, writer)
        (self.completion, self.admittedOn, self.client, self.nonceRetry) = (completion, admittedOn, client, nonceRetry)
    }

    deinit { admittedOn.leave(client: client) }

    /// Waits for the answer (the call keeps this relay until then).
    func start() {
        call.notify(self)
    }

    func upstreamAnswered() {
        let (method, context, writer, relay, nonceRetry, span) = (self.method, self.context, self.writer, self, self.nonceRetry, self.span)
        guard let answer = call.headIfArrived() else {
            let call = self.call
            return completion.continueInTask {
                defer { withExtendedLifetime(relay) {} }
                let answer: UpstreamResponse
                do throws(UpstreamError) { answer = try await call.finish() } catch {
                    return await UpstreamRelay.answerFailure(error, span: span, context: context, writer: writer)
                }
                if let nonceRetry, let again = nonceRetry.retry(after: answer.head) {
                    answer.discard()
                    return await Self.relayResent(again, retry: nonceRetry, method: method, span: span, context: context, writer: writer)
                }
                span?.end(status: answer.head.status)
                await UpstreamRelay.relay(answer, method: method, context: context, writer: writer)
            }
        }
        if let nonceRetry, let again = nonceRetry.retry(after: answer.head) {
            answer.discard()
            return completion.continueInTask {
                defer { withExtendedLifetime(relay) {} }
                await Self.relayResent(again, retry: nonceRetry, method: method, span: span, context: context, writer: writer)
            }
        }
        span?.end(status: answer.head.status)
        switch UpstreamRelay.prepare(answer, method: method, context: context) {
        case .whole(let response):
            if writer.respondImmediately(response) { return completion.handlerReturned() }
            completion.continueInTask { await writer.respond(response) }
        case .streamed(let head):
            completion.continueInTask {
                defer { withExtendedLifetime(relay) {} }
                await UpstreamRelay.stream(answer, head: head, framing: answer.framing, context: context, writer: writer)
            }
        }
    }

    /// The DPoP call sent once more with the nonce the upstream asked for (bodiless, plain TCP: what
    /// the loop sends), its answer relayed; a nonce in that answer is remembered too.
    private static func relayResent(_ request: UpstreamRequest, retry: DPoPNonceRetry, method: String, span: CallSpan?,
                                    context: GatewayContext, writer: any HTTPResponseWriter) async {
        guard let client = context.upstreams.plainClient else {
            return await UpstreamRelay.answerFailure(.connectFailed("no upstream client"), span: span, context: context, writer: writer)
        }
        let answer: UpstreamResponse
        do throws(UpstreamError) { answer = try await client.send(request, body: nil) } catch {
            return await UpstreamRelay.answerFailure(error, span: span, context: context, writer: writer)
        }
        span?.end(status: answer.head.status)
        retry.remembered(from: answer.head)
        await UpstreamRelay.relay(answer, method: method, context: context, writer: writer)
    }
}
