import HTTP1
import Logging
import Testing
@testable import GatehouseCore

/// The access-log writer writes, byte for byte, what the log handlers write for the same `request`
/// event: the lines are a contract (`SPEC.md`, `docs/operations.md`), the writer only a faster way
/// to them.
@Suite("Access log lines written straight into bytes")
struct AccessLogLineTests {
    private static let fixedTime: @Sendable () -> String = { "2025-01-02T03:04:05.678Z" }

    static let lines: [AccessLogLine] = {
        let trace = TraceID(high: 0x4bf9_2f35_77b3_4da6, low: 0x00a3_ce92_9d0e_0e47)
        let paths: [Substring] = ["/api/hello", "/", "/a=b", "/say \"hi\"", "/caf\u{e9}", "/tab\there", "/x\\y", "/\u{2028}",
                                  "/request-object/{handle}", ""]
        var lines: [AccessLogLine] = []
        for (index, path) in paths.enumerated() {
            lines.append(AccessLogLine(method: index == 3 ? "M=\"X" : "GET", path: path, status: [200, 404, 502, 0][index % 4],
                                       bytesSent: index * 997, durationNanoseconds: UInt64(index) * 1_234_567,
                                       requestLoop: index % 3, requestNumber: UInt64(index) * 0x1f3,
                                       clientIP: index % 2 == 0 ? "192.0.2.1" : "2001:db8::1",
                                       traceID: index % 2 == 0 ? trace : nil))
        }
        return lines
    }()

    @Test("JSON and text: the writer's line is the handler's line", arguments: [LogFormat.json, LogFormat.text])
    func sameBytes(format: LogFormat) throws {
        for line in Self.lines {
            let (viaHandler, handlerLines) = LogOutput.collecting()
            let (viaWriter, writerLines) = LogOutput.collecting()
            let logger = Logger(label: "gatehouse") { label in
                Self.handler(format, label: label, output: viaHandler)
            }
            var metadata: Logger.Metadata = [:]
            for (key, value) in line.metadata { metadata[key] = .string(value) }
            logger.info("request", metadata: metadata)
            let writer = try #require(Self.handler(format, label: "gatehouse", output: viaWriter).accessLogWriter(buffering: false))
            writer.write(line)
            #expect(writerLines() == handlerLines(), "\(line.path)")
        }
    }

    @Test("Buffered: nothing is written before the flush, then every line at once, each its own line")
    func buffered() throws {
        let (output, lines) = LogOutput.collecting()
        let writer = try #require(Self.handler(.json, label: "gatehouse", output: output).accessLogWriter(buffering: true))
        for line in Self.lines { writer.write(line) }
        #expect(lines().isEmpty)
        writer.flush()
        #expect(lines().count == Self.lines.count)
        #expect(lines().allSatisfy { $0.hasSuffix("}\n") && $0.dropLast().contains("\n") == false })
        writer.flush()
        #expect(lines().count == Self.lines.count, "a second flush writes nothing again")
    }

    @Test("A handler with metadata of its own, or above info, gives no writer (the logger writes those lines)")
    func noWriter() {
        var handler = JSONLogHandler(label: "gatehouse", level: .info)
        handler.metadata["instance"] = "a"
        #expect(handler.accessLogWriter(buffering: true) == nil)
        #expect(JSONLogHandler(label: "gatehouse", level: .warning).accessLogWriter(buffering: true) == nil)
        #expect(JSONLogHandler(label: "gatehouse", level: .info).accessLogWriter(buffering: true) != nil)
    }

    @Test("Milliseconds as Double printed them, for every microsecond count tried")
    func milliseconds() {
        var values: [UInt64] = Array(0...2_100)
        values += [9_999, 10_000, 10_001, 123_456, 999_999, 1_000_000, 86_400_000_000, 1 << 40]
        for microseconds in values {
            let nanoseconds = microseconds * 1000 + microseconds % 997
            #expect(AccessLogLine.milliseconds(nanoseconds) == "\(Double(nanoseconds / 1000) / 1000)", "\(microseconds) µs")
        }
    }

    @Test("The wall-clock timestamp is LogTimestamp's format, formatted again only when the second changes")
    func timestamp() {
        var seconds = LogTimestamp.Seconds()
        for _ in 0..<3 {
            let before = LogTimestamp.now()
            var bytes: [UInt8] = []
            seconds.appendNow(to: &bytes)
            let after = LogTimestamp.now()
            let stamp = String(decoding: bytes, as: UTF8.self)
            #expect(stamp.count == 24 && stamp.hasSuffix("Z"))
            #expect(before <= stamp && stamp <= after, "\(before) ≤ \(stamp) ≤ \(after)")
        }
    }

    private static func handler(_ format: LogFormat, label: String, output: LogOutput) -> any LogHandler & AccessLogWriting {
        switch format {
        case .json: JSONLogHandler(label: label, level: .info, output: output, timestamp: fixedTime)
        case .text: TextLogHandler(label: label, level: .info, output: output, timestamp: fixedTime)
        }
    }
}
