#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed system call, with the errno that explains it.
public struct SocketError: Error, CustomStringConvertible, Sendable {
    public var call: String
    public var errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    static func last(_ call: String) -> SocketError { SocketError(call: call, errno: Glibc.errno) }

    public var description: String { "\(call) failed: \(cString(strerror(errno))) (errno \(errno))" }
}

/// A resolved socket address (IPv4 or IPv6) in a form `bind`/`connect` accept.
public struct SocketAddress: Sendable, CustomStringConvertible {
    package var storage: sockaddr_storage
    package var length: socklen_t

    public var family: Int32 { Int32(storage.ss_family) }

    /// Parses a numeric IPv4 or IPv6 address (no name resolution).
    public init?(ip: String, port: Int) {
        guard (0...65535).contains(port) else { return nil }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, ip, &v4) == 1 {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = in_port_t(UInt16(port).bigEndian)
            sin.sin_addr = v4
            self.init(copying: sin)
        } else if inet_pton(AF_INET6, ip, &v6) == 1 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = in_port_t(UInt16(port).bigEndian)
            sin6.sin6_addr = v6
            self.init(copying: sin6)
        } else {
            return nil
        }
    }

    /// Copies a family-specific address (`sockaddr_in`, `sockaddr_in6`) into the storage `bind` and
    /// `connect` take, with its length.
    private init<FamilyAddress>(copying address: FamilyAddress) {
        var storage = sockaddr_storage()
        withUnsafeBytes(of: address) { source in
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) }
        }
        self.init(storage: storage, length: socklen_t(MemoryLayout<FamilyAddress>.size))
    }

    package init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    /// Resolves a host name or numeric address (blocking getaddrinfo; use at start-up or off the loop).
    public static func resolve(host: String, port: Int) throws -> [SocketAddress] {
        let trimmed = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let numeric = SocketAddress(ip: trimmed, port: port) { return [numeric] }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(trimmed, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            throw SocketError(call: "getaddrinfo(\(trimmed))", errno: rc)
        }
        defer { freeaddrinfo(first) }
        var out: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let addr = info.pointee.ai_addr {
                var storage = sockaddr_storage()
                let len = Int(info.pointee.ai_addrlen)
                withUnsafeMutableBytes(of: &storage) { dst in
                    dst.copyMemory(from: UnsafeRawBufferPointer(start: addr, count: min(len, dst.count)))
                }
                out.append(SocketAddress(storage: storage, length: info.pointee.ai_addrlen))
            }
            cursor = info.pointee.ai_next
        }
        return out
    }

    public var ip: String {
        var copy = storage
        return withUnsafePointer(to: &copy) { ptr -> String in
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            if family == AF_INET {
                return ptr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin_addr
                    inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
                    return cString(buffer)
                }
            } else {
                return ptr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    var addr = sin6.pointee.sin6_addr
                    inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
                    let text = cString(buffer)
                    // IPv4-mapped peers on a dual-stack socket are reported as plain IPv4.
                    if text.hasPrefix("::ffff:"), text.contains(".") { return String(text.dropFirst(7)) }
                    return text
                }
            }
        }
    }

    public var port: Int {
        var copy = storage
        return withUnsafePointer(to: &copy) { ptr -> Int in
            if family == AF_INET {
                return ptr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
            return ptr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
        }
    }

    public var peerAddress: PeerAddress { PeerAddress(ip: ip, port: port) }

    public var description: String { peerAddress.description }
}

/// Thin, errno-preserving wrappers over the socket calls the loops need.
public enum Sockets {
    public static func setNonBlocking(_ fd: Int32) throws {
        let flags = fcntl(fd, F_GETFL, 0)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else { throw SocketError.last("fcntl(O_NONBLOCK)") }
    }

    public static func setOption(_ fd: Int32, level: Int32, name: Int32, value: Int32) {
        var v = value
        _ = setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// TCP_NODELAY: a response leaves as soon as it is written (no Nagle / delayed-ACK stall).
    public static func setNoDelay(_ fd: Int32) {
        setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
    }

    /// Creates a non-blocking listening socket. `reusePort` lets each event loop own a listener on the
    /// same port so the kernel spreads connections across loops.
    public static func listen(on address: SocketAddress, backlog: Int32 = 1024, reusePort: Bool) throws -> Int32 {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError.last("socket") }
        setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, value: 1)
        if reusePort { setOption(fd, level: SOL_SOCKET, name: SO_REUSEPORT, value: 1) }
        if address.family == AF_INET6 { setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_V6ONLY, value: 0) }
        var storage = address.storage
        let rc = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, address.length) }
        }
        guard rc == 0 else {
            let error = SocketError.last("bind(\(address))")
            close(fd)
            throw error
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let error = SocketError.last("listen")
            close(fd)
            throw error
        }
        do { try setNonBlocking(fd) } catch { close(fd); throw error }
        return fd
    }

    public static func localAddress(of fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return rc == 0 ? SocketAddress(storage: storage, length: length) : nil
    }

    /// Starts a non-blocking connect. Returns the fd; `inProgress` is true when completion is signalled
    /// later by writability.
    public static func connect(to address: SocketAddress) throws -> (fd: Int32, inProgress: Bool) {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SocketError.last("socket") }
        setNoDelay(fd)
        var storage = address.storage
        let rc = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
        }
        if rc == 0 { return (fd, false) }
        let err = Glibc.errno
        if err == EINPROGRESS { return (fd, true) }
        close(fd)
        throw SocketError(call: "connect(\(address))", errno: err)
    }

    /// The pending error of a socket (after a non-blocking connect completes).
    public static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length)
        return value
    }
}

/// Decodes a NUL-terminated C string (nil pointer → empty).
func cString(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "" }
    let length = strlen(pointer)
    return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
}

func cString(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
