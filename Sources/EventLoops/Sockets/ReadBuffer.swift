#if canImport(Glibc)
import Glibc
#endif

/// A growable byte buffer with a read and a write index, reused across requests on one connection so
/// parsing works on bytes already in place (no per-request buffer allocation).
///
/// The storage is allocated by the first `prepareForWrite` and may be given back while the buffer
/// is empty (`releaseIfEmpty`): an idle keep-alive connection then holds no buffer pages.
///
/// The accessors the connections call per request are inlinable: the buffer lives in this module,
/// its users (the server's and the client's connections) in others.
public struct ReadBuffer {
    @usableFromInline var storage: UnsafeMutableRawPointer
    /// 0 while nothing is allocated (`storage` is then `unallocated`).
    private(set) var capacity = 0
    /// What an allocation starts with.
    private let initialCapacity: Int
    /// The storage is a slot of `slab` (the server connections' buffers; see `BufferSlab`).
    private var fromSlab = false
    private let slab: BufferSlab?
    @usableFromInline var readIndex = 0
    @usableFromInline var writeIndex = 0

    /// Storage starts on a page: `malloc` keeps a freed chunk's header in its first bytes, so a
    /// buffer that began mid-page would leave its one touched page resident after `free` and
    /// `malloc_trim`; page-aligned, the pages it used go back whole.
    @usableFromInline static let pageAlignment = 4096

    /// Stands for the storage while none is allocated: never written (the capacity is 0), never freed.
    nonisolated(unsafe) private static let unallocated = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)

    /// - Parameter capacity: what the first read allocates; the buffer grows from there as needed.
    /// - Parameter slab: where that first allocation comes from when it is the slab's slot size
    ///   (growth and other sizes come from `malloc`).
    public init(capacity: Int, slab: BufferSlab? = nil) {
        let initial = max(capacity, 1)
        initialCapacity = initial
        storage = Self.unallocated
        self.slab = slab?.slotSize == initial ? slab : nil
    }

    /// Must be called by the owner exactly once.
    public func deallocate() {
        guard capacity > 0 else { return }
        if fromSlab, let slab { slab.deallocate(storage, release: false) } else { storage.deallocate() }
    }

    private mutating func freeStorage(release: Bool) {
        if fromSlab, let slab { slab.deallocate(storage, release: release) } else { storage.deallocate() }
        fromSlab = false
    }

    /// Gives the storage back if nothing is buffered (an idle connection between requests); the
    /// next `prepareForWrite` allocates it again. Each idle keep-alive connection otherwise keeps a
    /// resident page or two of it.
    public mutating func releaseIfEmpty() {
        guard isEmpty, capacity > 0 else { return }
        freeStorage(release: true)
        storage = Self.unallocated
        capacity = 0
        readIndex = 0
        writeIndex = 0
    }

    /// Bytes allocated (0 before the first read and after `releaseIfEmpty`).
    public var allocatedCapacity: Int { capacity }

    @inlinable public var readableCount: Int { writeIndex - readIndex }
    @inlinable public var isEmpty: Bool { readIndex == writeIndex }

    @inlinable public var readable: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage + readIndex, count: writeIndex - readIndex)
    }

    @inlinable public mutating func consume(_ count: Int) {
        readIndex += count
        if readIndex == writeIndex {
            readIndex = 0
            writeIndex = 0
        }
    }

    /// Makes room for at least `minimum` more bytes, moving unread bytes to the front or growing up
    /// to `limit` total capacity. Returns the free space (may be smaller than asked at the limit).
    public mutating func prepareForWrite(minimum: Int, limit: Int) -> Int {
        if capacity - writeIndex >= minimum { return capacity - writeIndex }
        if capacity == 0 {
            if let slab {
                storage = slab.allocate()
                fromSlab = true
            } else {
                storage = UnsafeMutableRawPointer.allocate(byteCount: initialCapacity, alignment: Self.pageAlignment)
            }
            capacity = initialCapacity
            if capacity >= minimum { return capacity }
        }
        if readIndex > 0 {
            let count = readableCount
            if count > 0 { (storage).copyMemory(from: storage + readIndex, byteCount: count) }
            readIndex = 0
            writeIndex = count
        }
        if capacity - writeIndex < minimum && capacity < limit {
            let newCapacity = min(limit, max(capacity * 2, writeIndex + minimum))
            let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: Self.pageAlignment)
            grown.copyMemory(from: storage, byteCount: writeIndex)
            freeStorage(release: false)
            storage = grown
            capacity = newCapacity
        }
        return capacity - writeIndex
    }

    /// Reads from the socket `fd` into the free space. Returns what `recv(2)` returned (bytes, 0 at
    /// EOF, -1 with errno). `recv`, not `read`: the socket call without the file layer's checks and
    /// notifications, on every read of every request.
    public mutating func read(from fd: Int32, maximum: Int) -> Int {
        let space = min(maximum, capacity - writeIndex)
        guard space > 0 else { return -2 }
        let n = Glibc.recv(fd, storage + writeIndex, space, 0)
        if n > 0 { writeIndex += n }
        return n
    }

    /// Lets `body` write into the free space (at most `maximum` bytes; a TLS read, say) and keeps
    /// the `written` bytes it reports.
    public mutating func fill<Outcome>(maximum: Int, _ body: (UnsafeMutableRawPointer, Int) -> (written: Int, outcome: Outcome)) -> Outcome {
        let space = min(maximum, capacity - writeIndex)
        let (written, outcome) = body(storage + writeIndex, space)
        writeIndex += max(0, min(written, space))
        return outcome
    }

    /// Appends bytes (tests and the client).
    public mutating func append(_ bytes: UnsafeRawBufferPointer, limit: Int = .max) {
        _ = prepareForWrite(minimum: bytes.count, limit: Swift.max(limit, writeIndex + bytes.count))
        if let base = bytes.baseAddress, bytes.count > 0 {
            (storage + writeIndex).copyMemory(from: base, byteCount: bytes.count)
            writeIndex += bytes.count
        }
    }
}
