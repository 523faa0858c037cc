#if canImport(Glibc)
import Glibc
#endif

/// Holds a loopback port for a server that must know its own URL before it starts (the gateway's
/// `redirect_uri`, the provider's issuer), or keeps a stopped server's port from being handed to
/// another test's server while a test checks that connections to it are refused.
///
/// The socket is bound with `SO_REUSEPORT` and `SO_REUSEADDR` but never listens: it receives no
/// connections, keeps the kernel from handing the port to anyone else, and lets our servers bind it
/// — also again after a restart: their check that nothing listens there (a bind with
/// `SO_REUSEADDR` alone) passes beside a socket that does not listen, and their listeners join it
/// with `SO_REUSEPORT` as the same user.
public final class PortReservation: Sendable {
    public let port: Int
    private let fd: Int32

    /// - Parameter requested: the port, or 0 for any free one.
    public init(port requested: Int = 0) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RawClientError(what: "socket", errno: errno) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(requested).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(fd)
            throw RawClientError(what: "reserve a port", errno: code)
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
