import Testing
@testable import GatehouseCore

@Suite("DurationParser")
struct DurationParserTests {
    @Test("accepts units and plain seconds", arguments: [
        ("90s", 90), ("30m", 1_800), ("8h", 28_800), ("14d", 1_209_600), ("3600", 3_600), ("0", 0),
        ("0s", 0), ("1H", 3_600), ("2D", 172_800), ("45S", 45), ("10M", 600), (" 5m ", 300), ("\t7\n", 7),
        ("007s", 7),
    ])
    func accepts(text: String, seconds: Int) throws {
        #expect(try DurationParser.seconds(text) == seconds)
    }

    @Test("refuses malformed text", arguments: [
        "5x", "m", "s", "-5s", "+5s", "1.5h", "1 h", "1h30m", "h1", "1e3", "0x10", "٣s", "1_000", "10ms", "5 s",
    ])
    func refusesInvalid(text: String) {
        #expect(throws: DurationParser.ParseError.invalid) { try DurationParser.seconds(text) }
    }

    @Test("refuses empty and blank", arguments: ["", " ", "\t\n"])
    func refusesEmpty(text: String) {
        #expect(throws: DurationParser.ParseError.empty) { try DurationParser.seconds(text) }
    }

    @Test("overflow is an error, not a trap", arguments: [
        "9223372036854775807d", "9223372036854775808", "99999999999999999999999s", "153722867280912931h",
    ])
    func overflow(text: String) {
        #expect(throws: DurationParser.ParseError.tooLarge) { try DurationParser.seconds(text) }
    }

    @Test("largest representable value parses")
    func largest() throws {
        #expect(try DurationParser.seconds("9223372036854775807") == Int.max)
    }
}

@Suite("ByteSizeParser")
struct ByteSizeParserTests {
    @Test("accepts bytes and binary suffixes", arguments: [
        ("10m", 10_485_760), ("1k", 1_024), ("1K", 1_024), ("2M", 2_097_152), ("1g", 1_073_741_824), ("3G", 3_221_225_472),
        ("512", 512), ("0", 0), (" 4k ", 4_096),
    ])
    func accepts(text: String, bytes: Int) throws {
        #expect(try ByteSizeParser.bytes(text) == bytes)
    }

    @Test("refuses malformed text", arguments: ["10x", "k", "-1", "-1k", "+1k", "1.5m", "1 m", "10mb", "10MiB", "1t", "0x10"])
    func refusesInvalid(text: String) {
        #expect(throws: ByteSizeParser.ParseError.invalid) { try ByteSizeParser.bytes(text) }
    }

    @Test("refuses empty", arguments: ["", "   "])
    func refusesEmpty(text: String) {
        #expect(throws: ByteSizeParser.ParseError.empty) { try ByteSizeParser.bytes(text) }
    }

    @Test("overflow is an error", arguments: ["9223372036854775807k", "8589934592g", "99999999999999999999"])
    func overflow(text: String) {
        #expect(throws: ByteSizeParser.ParseError.tooLarge) { try ByteSizeParser.bytes(text) }
    }
}
