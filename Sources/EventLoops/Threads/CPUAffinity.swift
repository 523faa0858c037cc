#if canImport(Glibc)
import CLinux
import Glibc
#endif

/// Keeping each event loop on a CPU of its own (as nginx's `worker_cpu_affinity auto`).
///
/// Left to the scheduler, loops that are always busy do not stay spread: on the 2-CPU bench machine
/// both loops shared one CPU in about half of the samples while the clients' threads ran on the
/// other. Kept one per CPU, and each connection served by the loop on the CPU that processes its
/// packets (`ConnectionSteering` in HTTPServer), a connection's socket structures stay in one core's
/// caches: `/healthz` took 7.0–7.3 µs of CPU per request instead of 7.3–8.9 with the loops left to
/// the scheduler, the proxied `/api` 15.8–17.2 instead of 16.5–17.8 (bench/RESULTS.md, the entry of 9d561ee).
public enum CPUAffinity {
    /// The CPUs in the calling thread's affinity mask (`taskset`, a container's cpuset), in
    /// increasing order; empty when the mask cannot be read.
    public static func allowedCPUs() -> [Int] {
        #if canImport(Glibc)
        var cpus = [Int32](repeating: 0, count: 4_096)
        let count = cpus.withUnsafeMutableBufferPointer {
            Int(gatehouse_allowed_cpus($0.baseAddress, Int32($0.count)))
        }
        guard count > 0 else { return [] }
        return cpus.prefix(min(count, cpus.count)).map { Int($0) }
        #else
        return []
        #endif
    }

    /// The CPU each of `loops` loops is kept on: the allowed CPUs in order, when there is exactly one
    /// loop per allowed CPU and more than one CPU. Otherwise nil: with fewer CPUs than loops pinning
    /// would stack loops on the first ones; with more, it would leave CPUs the loops could move to;
    /// with one, there is nothing to choose.
    public static func placement(loops: Int, allowed: [Int]) -> [Int]? {
        loops > 1 && allowed.count == loops ? allowed : nil
    }

    /// Keeps the calling thread on `cpu`: 0, or the `errno` of `sched_setaffinity(2)` (the thread
    /// then stays where the scheduler puts it).
    public static func pinCurrentThread(to cpu: Int) -> Int32 {
        #if canImport(Glibc)
        return gatehouse_pin_thread(Int32(cpu))
        #else
        return 0
        #endif
    }
}
