import EventLoops
import Testing
@testable import HTTPServer
import TestSupport

/// What an idle keep-alive connection holds: no read buffer, and no large output capacity.
@Suite("Server: idle keep-alive connections hold no buffers")
struct IdleConnectionMemoryTests {
    @Test("The read buffer is allocated by the first read and given back only while empty")
    func readBufferReleasedWhenEmpty() {
        var buffer = ReadBuffer(capacity: 8 * 1024)
        defer { buffer.deallocate() }
        #expect(buffer.allocatedCapacity == 0)
        #expect(buffer.prepareForWrite(minimum: 4096, limit: 64 * 1024) == 8 * 1024)
        #expect(buffer.allocatedCapacity == 8 * 1024)

        let request: [UInt8] = Array("GET / HTTP/1.1\r\n".utf8)
        request.withUnsafeBytes { buffer.append($0) }
        buffer.releaseIfEmpty()
        #expect(buffer.allocatedCapacity == 8 * 1024, "unread bytes keep the buffer")
        #expect(Array(buffer.readable) == request)

        buffer.consume(buffer.readableCount)
        buffer.releaseIfEmpty()
        #expect(buffer.allocatedCapacity == 0)
        #expect(buffer.isEmpty)

        request.withUnsafeBytes { buffer.append($0) }
        #expect(buffer.allocatedCapacity == 8 * 1024)
        #expect(Array(buffer.readable) == request)
    }

    @Test("Slab buffers: a released slot's pages are given back (zero again), closed ones stay until trimmed")
    func slabSlots() {
        let slab = BufferSlab(slotSize: 8 * 1024, slotsPerSlab: 4)
        var buffer = ReadBuffer(capacity: 8 * 1024, slab: slab)
        let request: [UInt8] = Array("GET / HTTP/1.1\r\n".utf8)
        request.withUnsafeBytes { buffer.append($0) }
        #expect(slab.freeSlotCounts.released == 3, "one slab of four slots mapped, one in use")
        let used = buffer.readable.baseAddress!
        buffer.consume(buffer.readableCount)
        buffer.releaseIfEmpty()
        #expect(slab.freeSlotCounts == (resident: 0, released: 4))
        // The slot comes back from the system zeroed: its pages were given back.
        let again = slab.allocate()
        #expect(again == UnsafeMutableRawPointer(mutating: used))
        #expect(UnsafeRawBufferPointer(start: again, count: 8 * 1024).allSatisfy { $0 == 0 })
        again.storeBytes(of: 7, as: UInt8.self)
        slab.deallocate(again, release: false)
        #expect(slab.freeSlotCounts == (resident: 1, released: 3))
        #expect(slab.trim(keeping: 1) == 0)
        #expect(slab.trim(keeping: 0) == 8 * 1024)
        #expect(slab.freeSlotCounts == (resident: 0, released: 4))
        // A buffer that grows leaves the slab; its larger storage is malloc's.
        var growing = ReadBuffer(capacity: 8 * 1024, slab: slab)
        let large = [UInt8](repeating: 0x61, count: 20_000)
        large.withUnsafeBytes { growing.append($0) }
        #expect(Array(growing.readable) == large)
        #expect(slab.freeSlotCounts.released + slab.freeSlotCounts.resident == 4)
        growing.deallocate()
        buffer.deallocate()
        #expect(slab.freeSlotCounts.released + slab.freeSlotCounts.resident == 4)
        // Another size than the slot's never uses the slab.
        var other = ReadBuffer(capacity: 4096, slab: slab)
        request.withUnsafeBytes { other.append($0) }
        #expect(slab.freeSlotCounts.released + slab.freeSlotCounts.resident == 4)
        other.deallocate()
    }

    @Test("A released buffer grows past its initial capacity when more is needed at once")
    func releasedBufferGrows() {
        var buffer = ReadBuffer(capacity: 1024)
        defer { buffer.deallocate() }
        let large = [UInt8](repeating: 0x61, count: 5000)
        large.withUnsafeBytes { buffer.append($0) }
        #expect(buffer.readableCount == 5000)
        #expect(buffer.allocatedCapacity >= 5000)
        #expect(Array(buffer.readable) == large)
    }

    @Test("Buffers are given back only after a whole sweep interval without a request (a busy connection keeps them)")
    func releaseWaitsForAQuietSweep() {
        var policy = IdleBufferRelease()
        policy.requestBegan()
        var release = policy.sweep(idle: true)
        #expect(!release, "a request began since the last sweep: keep the buffers")
        release = policy.sweep(idle: true)
        #expect(release, "a whole interval without a request: give them back")
        release = policy.sweep(idle: false)
        #expect(!release, "never while a request is open or output is pending")
        policy.requestBegan()
        policy.requestBegan()
        release = policy.sweep(idle: true)
        #expect(!release)
        release = policy.sweep(idle: true)
        #expect(release)
    }

    @Test("After an answer, a keep-alive connection waits with no read buffer; the next request is read into a new one")
    func keepAliveConnectionReleasesItsReadBuffer() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send(get("/text"))
            #expect(try await client.readResponse().text == "hello world")
            let idle = await server.awaitConnection { $0.state == .awaitingHead && $0.inputCapacity == 0 }
            #expect(idle != nil, "the idle connection still holds its read buffer")

            try await client.send(get("/second"))
            #expect(try await client.readResponse().text == "/second")
        }
    }

    @Test("What a handler keeps with a connection serves its next requests, and goes with its idle buffers")
    func handlerMemoGivenBackWhenIdle() async throws {
        try await withServer { server in
            // Each pair is pipelined in one write: a connection with a request waiting is never
            // idle, so no sweep can fall between the two however slow the machine is (a sweep
            // interval between two separate writes did pass on a loaded 2-core run).
            let client = try await server.client()
            try await client.send(get("/memo") + get("/memo"))
            #expect(try await client.readResponse().text == "1")
            #expect(try await client.readResponse().text == "1", "the same connection's memo")
            let idle = await server.awaitConnection { $0.state == .awaitingHead && $0.inputCapacity == 0 }
            #expect(idle != nil)
            try await client.send(get("/memo") + get("/memo"))
            #expect(try await client.readResponse().text == "2", "made again after the sweep gave it back")
            #expect(try await client.readResponse().text == "2")
            let other = try await server.client()
            try await other.send(get("/memo"))
            #expect(try await other.readResponse().text == "3", "another connection's own")
        }
    }

    @Test("An answer larger than the retained capacity does not stay allocated on the idle connection")
    func largeAnswerCapacityFreed() async throws {
        try await withServer { server in
            let client = try await server.client()
            try await client.send(get("/big?size=20000"))
            #expect(try await client.readResponse().body.count == 20_000)
            let idle = await server.awaitConnection {
                $0.state == .awaitingHead && $0.outputCapacity <= HTTPConnection.retainedOutputCapacity
            }
            #expect(idle != nil, "the idle connection still holds the large answer's capacity")
        }
    }
}
