import Logging
import Testing
@testable import GatehouseCore

private let fixedTime: @Sendable () -> String = { "2025-01-02T03:04:05.678Z" }

private func jsonLogger(level: Logger.Level = .info) -> (Logger, @Sendable () -> [String]) {
    let (output, lines) = LogOutput.collecting()
    let logger = Logger(label: "gatehouse.test") { label in
        JSONLogHandler(label: label, level: level, output: output, timestamp: fixedTime)
    }
    return (logger, lines)
}

private func textLogger() -> (Logger, @Sendable () -> [String]) {
    let (output, lines) = LogOutput.collecting()
    let logger = Logger(label: "gatehouse.test") { label in
        TextLogHandler(label: label, level: .trace, output: output, timestamp: fixedTime)
    }
    return (logger, lines)
}

@Suite("JSON log handler")
struct JSONLogHandlerTests {
    @Test("one object a line with ts, level, msg, label and sorted metadata")
    func shape() {
        let (logger, lines) = jsonLogger()
        logger.info("login completed", metadata: ["session.id": "s1", "http.status": .stringConvertible(302)])
        #expect(lines() == [
            #"{"ts":"2025-01-02T03:04:05.678Z","level":"info","msg":"login completed","label":"gatehouse.test","http.status":"302","session.id":"s1"}"# + "\n",
        ])
    }

    @Test("nested metadata is flattened with dotted keys; arrays stay lists")
    func flattening() {
        let (logger, lines) = jsonLogger()
        logger.info("x", metadata: ["request": ["id": "r1", "peer": ["ip": "10.0.0.1"]], "scopes": ["openid", "email"]])
        #expect(lines().first?.contains(#""request.id":"r1","request.peer.ip":"10.0.0.1","scopes":["openid","email"]"#) == true)
    }

    @Test("handler metadata and call metadata merge, the call winning")
    func merging() {
        var (logger, lines) = jsonLogger()
        logger[metadataKey: "component"] = "proxy"
        logger[metadataKey: "k"] = "handler"
        logger.info("x", metadata: ["k": "call"])
        #expect(lines().first?.contains(#""component":"proxy","k":"call""#) == true)
    }

    @Test("levels below the handler's are dropped")
    func levels() {
        let (logger, lines) = jsonLogger(level: .notice)
        logger.debug("no")
        logger.info("no")
        logger.notice("yes")
        logger.critical("yes")
        #expect(lines().count == 2)
        #expect(lines().allSatisfy { $0.contains(#""msg":"yes""#) })
    }

    @Test("no log injection: newlines and control characters are escaped")
    func noInjection() {
        let (logger, lines) = jsonLogger()
        logger.info("a\nb\r\n{\"level\":\"critical\"}\u{1b}[31m\u{0}", metadata: ["v\n": "x\ny\"z\\", "msg": "spoof"])
        let all = lines()
        #expect(all.count == 1)
        let line = all[0]
        #expect(line.filter { $0 == "\n" || $0 == "\r\n" }.count == 1)
        #expect(line.hasSuffix("}\n"))
        #expect(line.contains(#""msg":"a\nb\r\n{\"level\":\"critical\"}\u001b[31m\u0000""#))
        #expect(line.contains(#""v\n":"x\ny\"z\\""#))
        #expect(line.contains(#""metadata.msg":"spoof""#))
        #expect(!line.unicodeScalars.dropLast().contains { $0.value < 0x20 })
    }

    @Test("concurrent writes produce whole lines")
    func concurrent() async {
        let (logger, lines) = jsonLogger()
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<50 {
                group.addTask {
                    for j in 0..<20 { logger.info("message", metadata: ["i": "\(i)", "j": "\(j)"]) }
                }
            }
        }
        let all = lines()
        #expect(all.count == 1_000)
        #expect(all.allSatisfy { $0.hasPrefix("{\"ts\"") && $0.hasSuffix("}\n") })
    }
}

@Suite("Text log handler")
struct TextLogHandlerTests {
    @Test("single readable line")
    func shape() {
        let (logger, lines) = textLogger()
        logger.warning("upstream slow", metadata: ["route": "/api", "note": "two words"])
        #expect(lines() == [#"2025-01-02T03:04:05.678Z warning gatehouse.test: upstream slow note="two words" route=/api"# + "\n"])
    }

    @Test("no log injection")
    func noInjection() {
        let (logger, lines) = textLogger()
        logger.info("a\nfake 2025 critical x", metadata: ["k": "v\r\nk2=v2"])
        #expect(lines().count == 1)
        #expect(lines()[0].filter { $0 == "\n" || $0 == "\r\n" }.count == 1)
        #expect(lines()[0].contains(#"a\nfake"#))
        #expect(lines()[0].contains(#"k="v\r\nk2=v2""#))
    }
}

@Suite("Log timestamps")
struct LogTimestampTests {
    @Test("formats ISO-8601 UTC with milliseconds", arguments: [
        (0, 0, "1970-01-01T00:00:00.000Z"),
        (951_782_400, 5, "2000-02-29T00:00:00.005Z"),
        (1_735_787_045, 678, "2025-01-02T03:04:05.678Z"),
        (4_102_444_799, 999, "2099-12-31T23:59:59.999Z"),
        (-1, 0, "1969-12-31T23:59:59.000Z"),
    ])
    func format(seconds: Int, ms: Int, expected: String) {
        #expect(LogTimestamp.format(seconds: seconds, milliseconds: ms) == expected)
    }

    @Test("now has the right shape")
    func now() {
        let ts = LogTimestamp.now()
        #expect(ts.count == 24)
        #expect(ts.hasSuffix("Z"))
    }
}

@Suite("Log bootstrap")
struct LogBootstrapTests {
    @Test("makeHandler picks the format and level")
    func makeHandler() {
        let json = LogBootstrap.makeHandler(label: "a", level: .error, format: .json)
        let text = LogBootstrap.makeHandler(label: "a", level: .debug, format: .text)
        #expect(json is JSONLogHandler)
        #expect(json.logLevel == .error)
        #expect(text is TextLogHandler)
        #expect(text.logLevel == .debug)
    }
}
