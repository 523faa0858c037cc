#if canImport(Glibc)
import Glibc
import CLinux
#endif
import Testing
@testable import EventLoops
@testable import HTTPServer

/// Event loops kept one per CPU, and each accepted connection served by the loop on the CPU that
/// processed its packets unless that loop already serves clearly more than the accepting one.
@Suite struct LoopPlacementTests {
    @Test func placementOnlyWithOneLoopPerCPU() {
        #expect(CPUAffinity.placement(loops: 2, allowed: [0, 1]) == [0, 1])
        #expect(CPUAffinity.placement(loops: 3, allowed: [2, 5, 7]) == [2, 5, 7])
        // A hand-picked loop count other than the CPUs, or a single CPU: the scheduler places them.
        #expect(CPUAffinity.placement(loops: 1, allowed: [0]) == nil)
        #expect(CPUAffinity.placement(loops: 2, allowed: [0, 1, 2]) == nil)
        #expect(CPUAffinity.placement(loops: 4, allowed: [0, 1]) == nil)
        #expect(CPUAffinity.placement(loops: 2, allowed: []) == nil)
    }

    /// The mask as the kernel prints it for people (`Cpus_allowed_list` in /proc/self/status:
    /// `0-3,6`): the same CPUs in the same order, and one loop per CPU by default.
    @Test func allowedCPUsAreTheKernelsList() throws {
        let listed = try #require(Self.cpusAllowedList())
        #expect(CPUAffinity.allowedCPUs() == listed)
        #expect(HTTPServerConfiguration.coreCount == listed.count)
    }

    private static func cpusAllowedList() -> [Int]? {
        guard let file = fopen("/proc/self/status", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 4096)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasPrefix("Cpus_allowed_list:") else { continue }
            var cpus: [Int] = []
            for range in text.dropFirst("Cpus_allowed_list:".count).split(separator: ",") {
                let bounds = range.split(separator: "-").compactMap { Int($0.filter(\.isNumber)) }
                guard let first = bounds.first, let last = bounds.last else { return nil }
                cpus += Array(first...last)
            }
            return cpus
        }
        return nil
    }

    @Test func connectionGoesToItsPacketsCPU() throws {
        let steering = try #require(ConnectionSteering(loopCPUs: [4, 6]))
        let even: (Int) -> Int = { _ in 10 }
        #expect(steering.target(incomingCPU: 6, acceptingLoop: 0, load: even) == 1)
        #expect(steering.target(incomingCPU: 4, acceptingLoop: 0, load: even) == 0)
        #expect(steering.target(incomingCPU: 4, acceptingLoop: 1, load: even) == 0)
        // Unknown, or a CPU no loop is kept on: the accepting loop serves it.
        #expect(steering.target(incomingCPU: -1, acceptingLoop: 1, load: even) == 1)
        #expect(steering.target(incomingCPU: 5, acceptingLoop: 1, load: even) == 1)
        #expect(ConnectionSteering(loopCPUs: [3]) == nil)
        #expect(ConnectionSteering(loopCPUs: [3, 3]) == nil)
    }

    @Test func busierLoopTakesNoMore() throws {
        let steering = try #require(ConnectionSteering(loopCPUs: [0, 1]))
        // Slack: 4 connections, or an eighth of the accepting loop's.
        #expect(steering.target(incomingCPU: 0, acceptingLoop: 1, load: { $0 == 0 ? 14 : 10 }) == 0)
        #expect(steering.target(incomingCPU: 0, acceptingLoop: 1, load: { $0 == 0 ? 15 : 10 }) == 1)
        #expect(steering.target(incomingCPU: 0, acceptingLoop: 1, load: { $0 == 0 ? 900 : 800 }) == 0)
        #expect(steering.target(incomingCPU: 0, acceptingLoop: 1, load: { $0 == 0 ? 901 : 800 }) == 1)
    }

    /// Every SYN processed on one CPU (a single-queue NIC): connections still end up spread, the
    /// preferred loop about an eighth ahead of the others (the slack), where `SO_INCOMING_CPU` on
    /// the listeners would have put them all on one loop.
    @Test func oneInterruptCPUStillSpreads() throws {
        let steering = try #require(ConnectionSteering(loopCPUs: [0, 1, 2, 3]))
        var load = [0, 0, 0, 0]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<4_000 {
            let accepting = Int.random(in: 0..<4, using: &generator)  // the kernel's hash
            load[steering.target(incomingCPU: 0, acceptingLoop: accepting, load: { load[$0] })] += 1
        }
        let fewest = try #require(load.min())
        #expect(Double(load[0]) <= Double(fewest) * 1.25, "\(load)")
        #expect(fewest > 850, "\(load)")
    }

    /// A client on each CPU in turn: with the loops kept one per CPU, its connection is served by
    /// the loop on its own CPU (on loopback the client's CPU processes the handshake).
    @Test func servedOnTheClientsCPU() async throws {
        let cpus = CPUAffinity.allowedCPUs()
        guard cpus.count >= 2 else { return }  // one CPU: nothing to place
        var config = TestServer.configuration()
        config.loopCount = cpus.count
        config.pinsLoopsToCPUs = true
        let server = try TestServer(config)
        let port = server.port
        for (expectedLoop, cpu) in cpus.enumerated().prefix(4) {
            var served: [String] = []
            for _ in 0..<4 {
                served.append(await Self.loopServing(fromCPU: cpu, port: port))
            }
            #expect(served == Array(repeating: "\(expectedLoop)", count: 4), "client on CPU \(cpu)")
        }
        await server.stop()
    }

    /// `GET /loop` over a new connection made by a thread kept on `cpu`: the body (the loop index).
    private static func loopServing(fromCPU cpu: Int, port: Int) async -> String {
        await withCheckedContinuation { continuation in
            let started = DetachedThread.start(name: "test-client") {
                guard gatehouse_pin_thread(Int32(cpu)) == 0 else { return continuation.resume(returning: "unpinned") }
                continuation.resume(returning: blockingGet("/loop", port: port))
            }
            if !started { continuation.resume(returning: "no thread") }
        }
    }

    private static func blockingGet(_ path: String, port: Int) -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return "socket" }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return "connect" }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".utf8)
        guard send(fd, request, request.count, 0) == request.count else { return "send" }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            answer.append(contentsOf: buffer[0..<n])
        }
        let text = String(decoding: answer, as: UTF8.self)
        guard let bodyStart = text.range(of: "\r\n\r\n") else { return "no answer" }
        return String(text[bodyStart.upperBound...])
    }
}
