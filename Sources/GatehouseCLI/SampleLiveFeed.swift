import EventLoops
import FoundationEssentials
import Gatehouse
import GatehouseOIDC
import HTTP1
import HTTPServer

/// The sample API's WebSocket for the demo SPA's live panel: after the handshake it sends a text
/// message every second, answers pings, and closes when the browser (or the gateway) does. A
/// minimal RFC 6455 server, enough for a demo: it never reads a message, only control frames.
final class SampleLiveFeed: TunnelEndpointHandler {
    private let endpoint: any TunnelEndpoint
    private let loop: EventLoop
    private let name: String
    private var count = 0
    private var timer: TimerID?
    private var inbound: [UInt8] = []
    private var finished = false

    static func accept(_ request: HTTPRequest, writer: any HTTPResponseWriter, userinfo: String) async {
        guard let key = request.head.headers["Sec-WebSocket-Key"], let loop = EventLoop.current else {
            return await writer.respond(HTTPResponse(status: 400, body: "a WebSocket handshake needs Sec-WebSocket-Key"))
        }
        let head = HTTPResponseHead(status: 101, headers: ["Upgrade": "websocket",
                                                           "Sec-WebSocket-Accept": WebSocketHandshake.accept(forKey: key)])
        guard let endpoint = try? await writer.switchProtocols(head) else { return }
        let claims = (try? JSONValue.parse(userinfo.utf8))?.objectValue
        let name = claims?["name"]?.stringValue ?? claims?["sub"]?.stringValue ?? "you"
        SampleLiveFeed(endpoint: endpoint, loop: loop, name: name).start()
    }

    private init(endpoint: any TunnelEndpoint, loop: EventLoop, name: String) {
        self.endpoint = endpoint
        self.loop = loop
        self.name = name
    }

    private func start() {
        endpoint.attach(self)
        tick()
    }

    /// The timer keeps the feed alive until it finishes.
    private func tick() {
        guard !finished else { return }
        count += 1
        // UTC, hours:minutes:seconds: a locale's time format would need Foundation's ICU tables.
        let seconds = Int(Date().timeIntervalSince1970) % 86_400
        let time = [seconds / 3600, seconds / 60 % 60, seconds % 60].map { $0 < 10 ? "0\($0)" : "\($0)" }.joined(separator: ":")
        send(opcode: 0x1, Array("Update \(count) for \(name) at \(time), sent by the sample API".utf8))
        timer = loop.scheduleTimer(afterNanoseconds: 1_000_000_000) { [self] in self.tick() }
    }

    private func send(opcode: UInt8, _ payload: [UInt8]) {
        guard payload.count < 126 else { return }
        let frame = [0x80 | opcode, UInt8(payload.count)] + payload
        // A frame this small either fits the socket buffer or the browser is not reading: then the
        // update is dropped (a real server would queue it, bounded).
        let result = frame.withUnsafeBytes { endpoint.send($0) }
        if result == .closed { finish() }
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        endpoint.close()
    }

    func endpointReadable(_ endpoint: any TunnelEndpoint) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !finished {
            switch buffer.withUnsafeMutableBytes({ endpoint.receive(into: $0) }) {
            case .bytes(let n): inbound.append(contentsOf: buffer[0..<n]); handleFrames()
            case .wouldBlock: return
            case .closed: return finish()
            }
        }
    }

    /// Answers the browser's control frames (client frames are always masked).
    private func handleFrames() {
        while inbound.count >= 2 && !finished {
            let short = Int(inbound[1] & 0x7F)
            let extra = short == 126 ? 2 : (short == 127 ? 8 : 0)
            let headerLength = 2 + extra + 4
            guard inbound.count >= headerLength else { return }
            var length = short
            if extra > 0 { length = inbound[2..<(2 + extra)].reduce(0) { $0 << 8 | Int($1) } }
            guard length <= 1 << 20 else { return finish() }
            guard inbound.count >= headerLength + length else { return }
            let mask = Array(inbound[(headerLength - 4)..<headerLength])
            let payload = (0..<length).map { inbound[headerLength + $0] ^ mask[$0 % 4] }
            let opcode = inbound[0] & 0x0F
            inbound.removeFirst(headerLength + length)
            if opcode == 0x8 {
                send(opcode: 0x8, Array(payload.prefix(2)))
                return finish()
            }
            if opcode == 0x9 { send(opcode: 0xA, payload) }
        }
    }

    func endpointWritable(_ endpoint: any TunnelEndpoint) {}

    func endpointEnded(_ endpoint: any TunnelEndpoint, graceful: Bool) {
        if graceful { send(opcode: 0x8, [0x03, 0xE9]) }
        finish()
    }
}
