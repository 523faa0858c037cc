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
    /// The call's admission on its route, held until the answer is relayed (here or in a task).
    private let ticket: InFlightTicket

    init(call: consuming UpstreamCall, method: String, context: GatewayContext, writer: any HTTPResponseWriter,
         completion: HandlerCompletion, ticket: InFlightTicket) {
        self.call = call
        (self.method, self.context, self.writer) = (method, context, writer)
        (self.completion, self.ticket) = (completion, ticket)
    }

    /// Waits for the answer (the call keeps this relay until then).
    func start() {
        call.notify(self)
    }

    func upstreamAnswered() {
        let (method, context, writer, ticket) = (self.method, self.context, self.writer, self.ticket)
        guard let answer = call.headIfArrived() else {
            let call = self.call
            return completion.continueInTask {
                defer { withExtendedLifetime(ticket) {} }
                let answer: UpstreamResponse
                do throws(UpstreamError) {
                    answer = try await call.finish()
                } catch {
                    return await UpstreamRelay.answerFailure(error, context: context, writer: writer)
                }
                await UpstreamRelay.relay(answer, method: method, context: context, writer: writer)
            }
        }
        switch UpstreamRelay.prepare(answer, method: method, context: context) {
        case .whole(let response):
            if writer.respondImmediately(response) { return completion.handlerReturned() }
            completion.continueInTask { await writer.respond(response) }
        case .streamed(let head):
            completion.continueInTask {
                defer { withExtendedLifetime(ticket) {} }
                await UpstreamRelay.stream(answer, head: head, framing: answer.framing, context: context, writer: writer)
            }
        }
    }
}
