#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import TestSupport

/// Children the tests start inherit none of the test process's descriptors (`SpawnDescriptors`): a
/// daemon that kept another test's pipe open made that test wait for ever.
@Suite("Test fixtures: spawned children inherit no descriptors")
struct SpawnDescriptorsTests {
    /// True when the read end sees the end of the pipe within `milliseconds` (every write end closed).
    private func seesEnd(_ readEnd: Int32, within milliseconds: Int32) -> Bool {
        var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) == 1 else { return false }
        var byte: UInt8 = 0
        return read(readEnd, &byte, 1) == 0
    }

    @Test("a daemon started while a plain pipe is open does not keep its write end")
    func daemonHoldsNoPipe() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)  // deliberately not close-on-exec
        defer { close(fds[0]) }
        let daemon = try SpawnedDaemon(["/bin/sleep", "30"], logPath: "/dev/null")
        defer { daemon.stop(signal: SIGKILL) }
        close(fds[1])
        #expect(seesEnd(fds[0], within: 5_000), "the daemon holds the pipe's write end")
    }

    @Test("a child process's output pipe ends when the child does, whatever else runs")
    func childPipeEnds() throws {
        let daemon = try SpawnedDaemon(["/bin/sleep", "30"], logPath: "/dev/null")
        defer { daemon.stop(signal: SIGKILL) }
        let (status, output) = try ChildProcess.run(["/bin/sh", "-c", "echo done"])
        #expect(status == 0 && output == "done\n")
        let (readEnd, writeEnd) = try SpawnDescriptors.pipe()
        defer { close(readEnd) }
        #expect(fcntl(readEnd, F_GETFD) & FD_CLOEXEC != 0 && fcntl(writeEnd, F_GETFD) & FD_CLOEXEC != 0)
        close(writeEnd)
        #expect(seesEnd(readEnd, within: 5_000))
    }
}
