#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Memory for the connections' read buffers of their first size, mapped from the system in slabs
/// and given back to it page by page.
///
/// From `malloc`, an idle connection's released buffer kept a resident page: the allocator writes
/// its free-list pointers into the first bytes of a freed chunk, and a chunk between live small
/// allocations (what the connection allocates after its buffer) is never merged away, so
/// `malloc_trim` cannot return that page: 4 KiB per idle keep-alive connection. A slot here holds
/// no allocator data: a released slot's pages are handed back with `madvise` and come back zeroed
/// when the slot is used again.
///
/// Slots freed by a closing connection stay resident (the next connection reuses them without a
/// page fault) until the server's sweep trims all but a few (`trim`).
public final class BufferSlab: Sendable {
    /// The slab for the server connections' read buffers.
    public static let shared = BufferSlab(slotSize: 8 * 1024, slotsPerSlab: 64)

    public let slotSize: Int
    private let slotsPerSlab: Int

    private struct FreeSlots: ~Copyable {
        /// Addresses of free slots whose pages may be resident.
        var resident: [UInt] = []
        /// Addresses of free slots whose pages were given back.
        var released: [UInt] = []
    }

    private let free = Mutex(FreeSlots())

    public init(slotSize: Int, slotsPerSlab: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        precondition(slotSize > 0 && slotSize % page == 0, "slots are whole pages")
        self.slotSize = slotSize
        self.slotsPerSlab = slotsPerSlab
    }

    /// A slot of `slotSize` bytes, page-aligned.
    public func allocate() -> UnsafeMutableRawPointer {
        let reused = free.withLock { slots -> UInt? in slots.resident.popLast() ?? slots.released.popLast() }
        if let reused { return UnsafeMutableRawPointer(bitPattern: reused)! }
        let size = slotSize * slotsPerSlab
        guard let slab = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              slab != MAP_FAILED else {
            // As `malloc` failing: Swift's own allocations stop the process the same way.
            fatalError("read buffer memory: mmap of \(size) bytes failed (errno \(errno))")
        }
        let base = UInt(bitPattern: slab)
        free.withLock { slots in
            for index in (1..<slotsPerSlab).reversed() { slots.released.append(base + UInt(index * slotSize)) }
        }
        return slab
    }

    /// Takes a slot back. `release`: give its pages back to the system now (a connection gone
    /// idle); otherwise they stay resident for the next connection until `trim`.
    public func deallocate(_ slot: UnsafeMutableRawPointer, release: Bool) {
        if release { _ = madvise(slot, slotSize, MADV_DONTNEED) }
        let address = UInt(bitPattern: slot)
        free.withLock { slots in
            if release { slots.released.append(address) } else { slots.resident.append(address) }
        }
    }

    /// Gives back the pages of the free slots beyond the `keeping` most recently freed. Returns
    /// the bytes given back.
    @discardableResult
    public func trim(keeping: Int) -> Int {
        let surplus = free.withLock { slots -> [UInt] in
            guard slots.resident.count > keeping else { return [] }
            let surplus = Array(slots.resident[..<(slots.resident.count - keeping)])
            slots.resident.removeFirst(surplus.count)
            return surplus
        }
        guard !surplus.isEmpty else { return 0 }
        for address in surplus { _ = madvise(UnsafeMutableRawPointer(bitPattern: address), slotSize, MADV_DONTNEED) }
        free.withLock { slots in slots.released.append(contentsOf: surplus) }
        return surplus.count * slotSize
    }

    /// Free slots (for tests): resident and given back.
    public var freeSlotCounts: (resident: Int, released: Int) {
        free.withLock { ($0.resident.count, $0.released.count) }
    }
}
