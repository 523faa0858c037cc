import EventLoops

/// The process entry point: the command runs on Swift's global executor while the main thread
/// waits here for it.
///
/// An `async` `@main` parks the main thread in `dispatch_main()`, which calls `pthread_exit`; that
/// unwinds the main thread's stack through the binary's unwind tables, and the pages it touched
/// (about 0.5 MiB of `.eh_frame` and libgcc's unwinder) stayed resident for the life of the
/// process. Nothing in Gatehouse runs on the main actor, so nothing needs the main queue drained.
@main
enum GatehouseMain {
    static func main() {
        // Before any other thread exists, so that all of them inherit it (`ShutdownSignals`).
        ShutdownSignals.blockForLongRunningCommand(CommandLine.arguments)
        let completion = CommandCompletion()
        // Detached: a task created here would inherit the main actor, whose queue no one drains.
        Task.detached {
            await GatehouseCommand.main()  // exits the process itself on an error or `--help`
            completion.finish()
        }
        completion.wait()
    }
}

/// "The command has returned", for a thread that cannot `await`.
private final class CommandCompletion: @unchecked Sendable {
    private let condition = ThreadCondition()
    private var finished = false  // guarded by `condition`'s lock

    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    func wait() {
        condition.lock()
        while !finished { condition.wait() }
        condition.unlock()
    }
}
