/// The outcome of feeding a (possibly partial) head to a parser.
public enum HeadParseResult<Head: Sendable>: Sendable {
    /// The buffer ends before the head does: call again once more bytes have arrived.
    case incomplete
    /// A whole head; `consumed` bytes from the start of the buffer belong to it (leading empty lines
    /// included). Whatever follows is body or the next message.
    case complete(Head, consumed: Int)
}

extension HeadParseResult: Equatable where Head: Equatable {}
