/// One header field as name and value Strings: the name keeps its original spelling, lookups ignore
/// ASCII case. (``HTTPHeaders`` keeps its fields as bytes and makes these when asked.)
public struct HTTPField: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// A field checked once to be writable as it is (its name a token, its value free of CR, LF,
    /// NUL and the other controls), for fields written on many answers: ``HTTPHeaders`` keeps it
    /// marked as checked, and the head writer then copies it without looking at its bytes again.
    public struct Checked: Sendable, Equatable {
        public let field: HTTPField
        /// `name: value\r\n`, as it is appended.
        let line: [UInt8]
        let nameLength: Int

        /// Nil when the field could not be written (the writer would drop it).
        public init?(name: String, value: String) {
            let field = HTTPField(name: name, value: value)
            guard HeadWriter.isSafe(field) else { return nil }
            self.field = field
            line = Array(name.utf8) + [ASCII.colon, ASCII.space] + Array(value.utf8) + [ASCII.cr, ASCII.lf]
            nameLength = name.utf8.count
        }
    }

    /// Checked fields that are added together (the security headers of every answer): their lines
    /// one after the other, appended with one copy.
    public struct CheckedGroup: Sendable, Equatable {
        let lines: [UInt8]
        /// Each field's name length and line length, in order.
        let spans: [(nameLength: Int, lineLength: Int)]

        public init(_ fields: [Checked]) {
            lines = fields.flatMap(\.line)
            spans = fields.map { ($0.nameLength, $0.line.count) }
        }

        public static func == (a: CheckedGroup, b: CheckedGroup) -> Bool {
            a.lines == b.lines && a.spans.map(\.nameLength) == b.spans.map(\.nameLength)
        }
    }
}
