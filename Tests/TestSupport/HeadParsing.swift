import HTTP1

/// Bytes of a test message; write `\r\n` explicitly, so a bare `\n` in a vector is always deliberate.
public func wire(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Anything that parses a head from a growing buffer (both head parsers).
public protocol HeadParsing {
    associatedtype Head: Sendable & Equatable
    init(limits: HTTPParserLimits)
    mutating func parse(_ bytes: UnsafeRawBufferPointer, remembering: Bool) throws(HTTPParseError) -> HeadParseResult<Head>
}

extension HeadParsing {
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> HeadParseResult<Head> {
        try parse(bytes, remembering: true)
    }
}

extension RequestHeadParser: HeadParsing {}
extension ResponseHeadParser: HeadParsing {}

/// What one call returned, errors included, so that feeding strategies can be compared.
public enum HeadOutcome<Head: Equatable>: Equatable {
    case incomplete
    case complete(Head, consumed: Int)
    case failed(HTTPParseError)

    public var isIncomplete: Bool { self == .incomplete }
}

extension HeadParsing {
    public mutating func outcome(_ bytes: ArraySlice<UInt8>) -> HeadOutcome<Head> {
        bytes.withUnsafeBytes { raw in
            do throws(HTTPParseError) {
                switch try parse(raw) {
                case .incomplete: return .incomplete
                case .complete(let head, let consumed): return .complete(head, consumed: consumed)
                }
            } catch {
                return .failed(error)
            }
        }
    }
}
