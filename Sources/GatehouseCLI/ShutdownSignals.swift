import EventLoops
#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM and SIGINT for the commands that run until told to stop (`serve`, `demo`), and SIGHUP
/// (reload the configuration), taken with `sigwait` on a thread of their own, so no work happens in
/// a signal handler.
///
/// None is ever lost, however early it comes: `GatehouseMain` blocks both signals in the main thread
/// before any other thread exists (`blockForLongRunningCommand`), every thread inherits the block,
/// and a signal stays pending until the waiting thread takes it. (Dispatch's signal sources, used
/// before, set `SIG_IGN` and registered asynchronously: a SIGTERM sent the moment `/healthz` first
/// answered was dropped in one start of ten.)
final class ShutdownSignals: Sendable {
    private static let names: [(Int32, String)] = [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT"), (SIGHUP, "SIGHUP")]
    private static let commands: Set<String> = ["serve", "demo"]

    private let stream: AsyncStream<String>

    /// Blocks SIGTERM and SIGINT in the calling thread when `arguments` run `serve` or `demo`; call
    /// it first thing in the main thread, before any thread is created. Other commands keep the
    /// default (a Ctrl-C ends them).
    static func blockForLongRunningCommand(_ arguments: [String]) {
        guard let command = arguments.dropFirst().first(where: { !$0.hasPrefix("-") }), commands.contains(command) else {
            return
        }
        var set = signalSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    private static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for (number, _) in names { sigaddset(&set, number) }
        return set
    }

    /// - Parameter reloads: where SIGHUP is told (`serve` reloads its configuration file); without
    ///   it SIGHUP is taken and ignored.
    init(reloads: AsyncStream<String>.Continuation? = nil) {
        stream = AsyncStream<String> { continuation in
            // Blocked here too: a command started without `GatehouseMain` (none today) still has
            // this thread, and the waiting thread made from it, take the signal.
            var set = Self.signalSet()
            pthread_sigmask(SIG_BLOCK, &set, nil)
            let started = DetachedThread.start(name: "gatehouse-signal") {
                var set = Self.signalSet()
                while true {
                    var number: Int32 = 0
                    guard sigwait(&set, &number) == 0 else { continue }
                    if number == SIGHUP {
                        reloads?.yield("SIGHUP")
                        continue
                    }
                    continuation.yield(Self.names.first { $0.0 == number }?.1 ?? "signal \(number)")
                }
            }
            if !started { continuation.finish() }
        }
    }

    /// The first signal's name ("end" if no thread could wait for one). Call once.
    func wait() async -> String {
        for await name in stream { return name }
        return "end"
    }
}
