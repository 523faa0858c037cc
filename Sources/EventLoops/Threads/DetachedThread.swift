#if canImport(Glibc)
import CLinux
import Glibc
#endif

/// A named background thread straight on pthreads: Foundation's `Thread` would link all of
/// Foundation (and ICU) into the binary for this alone.
public enum DetachedThread {
    /// Starts `body` on a new detached thread named `name` (its first 15 bytes show in `top -H`).
    /// Returns false, without running `body`, when the system refuses a thread.
    @discardableResult
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(ThreadBody(name: name, body))
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
            _ = gatehouse_set_thread_name(start.name)
            start.body()
            return nil
        }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}

private final class ThreadBody {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, _ body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}
