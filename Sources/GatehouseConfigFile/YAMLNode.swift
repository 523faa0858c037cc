import CYAML

/// One node of a YAML document as the configuration file reads it: scalars as text, mappings in
/// the order written, each with the line it starts on (1-based), so every message can name it.
///
/// Read with libyaml's event parser. No tags are resolved beyond what the loader needs (every
/// scalar is text; the loader decides what a key's value must look like), and aliases are refused:
/// a configuration has no use for them, and expanding them is how "billion laughs" documents grow.
public indirect enum YAMLNode: Sendable, Equatable {
    case scalar(String, line: Int, quoted: Bool)
    case mapping([(key: String, keyLine: Int, value: YAMLNode)], line: Int)
    case sequence([YAMLNode], line: Int)

    public var line: Int {
        switch self {
        case .scalar(_, let line, _), .mapping(_, let line), .sequence(_, let line): line
        }
    }

    public static func == (a: YAMLNode, b: YAMLNode) -> Bool {
        switch (a, b) {
        case let (.scalar(x, l1, q1), .scalar(y, l2, q2)): x == y && l1 == l2 && q1 == q2
        case let (.sequence(x, l1), .sequence(y, l2)): x == y && l1 == l2
        case let (.mapping(x, l1), .mapping(y, l2)):
            l1 == l2 && x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.keyLine == $1.keyLine && $0.value == $1.value }
        default: false
        }
    }

    /// A plain scalar `~`, `null` or nothing at all: the YAML null.
    public var isNull: Bool {
        if case .scalar(let text, _, false) = self { return text.isEmpty || text == "~" || text == "null" || text == "Null" || text == "NULL" }
        return false
    }

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let line: Int
        public let message: String
        public var description: String { "line \(line): \(message)" }
    }

    /// The document in `text` (one document; an empty file is an empty mapping).
    public static func parse(_ text: String, maximumDepth: Int = 32) throws(ParseError) -> YAMLNode {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { throw ParseError(line: 0, message: "the YAML parser could not start") }
        defer { yaml_parser_delete(&parser) }
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer { buffer throws(ParseError) -> YAMLNode in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var reader = EventReader(parser: &parser, maximumDepth: maximumDepth)
            return try reader.document()
        }
    }
}

/// Builds the tree from libyaml's events (stream, document, then nodes).
private struct EventReader {
    var parser: UnsafeMutablePointer<yaml_parser_t>
    let maximumDepth: Int

    init(parser: UnsafeMutablePointer<yaml_parser_t>, maximumDepth: Int) {
        self.parser = parser
        self.maximumDepth = maximumDepth
    }

    enum Event {
        case streamStart, streamEnd, documentStart, documentEnd
        case scalar(String, quoted: Bool)
        case sequenceStart, sequenceEnd, mappingStart, mappingEnd
        case alias
    }

    mutating func next() throws(YAMLNode.ParseError) -> (Event, line: Int) {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) == 1 else {
            let problem = parser.pointee.problem.map { String(cString: $0) } ?? "not valid YAML"
            let line = Int(parser.pointee.problem_mark.line) + 1
            throw YAMLNode.ParseError(line: line, message: problem)
        }
        defer { yaml_event_delete(&event) }
        let line = Int(event.start_mark.line) + 1
        switch event.type {
        case YAML_STREAM_START_EVENT: return (.streamStart, line)
        case YAML_STREAM_END_EVENT: return (.streamEnd, line)
        case YAML_DOCUMENT_START_EVENT: return (.documentStart, line)
        case YAML_DOCUMENT_END_EVENT: return (.documentEnd, line)
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            let text = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
            return (.scalar(text, quoted: scalar.style != YAML_PLAIN_SCALAR_STYLE), line)
        case YAML_SEQUENCE_START_EVENT: return (.sequenceStart, line)
        case YAML_SEQUENCE_END_EVENT: return (.sequenceEnd, line)
        case YAML_MAPPING_START_EVENT: return (.mappingStart, line)
        case YAML_MAPPING_END_EVENT: return (.mappingEnd, line)
        case YAML_ALIAS_EVENT: return (.alias, line)
        default: return (.streamEnd, line)
        }
    }

    mutating func document() throws(YAMLNode.ParseError) -> YAMLNode {
        guard case (.streamStart, _) = try next() else { throw .init(line: 1, message: "not a YAML stream") }
        let (first, line) = try next()
        switch first {
        case .streamEnd: return .mapping([], line: 1)
        case .documentStart: break
        default: throw .init(line: line, message: "not a YAML document")
        }
        let (event, at) = try next()
        let root = try node(event, line: at, depth: 0)
        guard case (.documentEnd, _) = try next() else { throw .init(line: at, message: "a document has one root") }
        let (after, afterLine) = try next()
        guard case .streamEnd = after else {
            throw .init(line: afterLine, message: "the file holds more than one YAML document (---): write one")
        }
        return root
    }

    mutating func node(_ event: Event, line: Int, depth: Int) throws(YAMLNode.ParseError) -> YAMLNode {
        guard depth < maximumDepth else { throw .init(line: line, message: "nested deeper than \(maximumDepth) levels") }
        switch event {
        case .scalar(let text, let quoted):
            return .scalar(text, line: line, quoted: quoted)
        case .alias:
            throw .init(line: line, message: "an alias (*name) is not supported in the configuration: write the value out")
        case .sequenceStart:
            var items: [YAMLNode] = []
            while true {
                let (next, at) = try self.next()
                if case .sequenceEnd = next { return .sequence(items, line: line) }
                items.append(try node(next, line: at, depth: depth + 1))
            }
        case .mappingStart:
            var pairs: [(key: String, keyLine: Int, value: YAMLNode)] = []
            while true {
                let (keyEvent, keyLine) = try self.next()
                if case .mappingEnd = keyEvent { return .mapping(pairs, line: line) }
                guard case .scalar(let key, _) = keyEvent else {
                    throw .init(line: keyLine, message: "a key must be a plain name, not a list or a map")
                }
                if pairs.contains(where: { $0.key == key }) {
                    throw .init(line: keyLine, message: "\(key) is given twice in the same map")
                }
                let (valueEvent, valueLine) = try self.next()
                pairs.append((key, keyLine, try node(valueEvent, line: valueLine, depth: depth + 1)))
            }
        default:
            throw .init(line: line, message: "unexpected YAML structure")
        }
    }
}
