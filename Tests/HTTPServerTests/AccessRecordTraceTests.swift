import Synchronization
import Testing
import TestSupport
@testable import HTTP1
@testable import HTTPServer

/// Which requests' access records carry a trace id: every one handed to the handler; one answered
/// without it only when the observer reads trace ids (a fresh trace is three keyed hashes).
@Suite("Server: trace ids in access records")
struct AccessRecordTraceTests {
    final class RecordingObserver: HTTPServerObserver {
        let recordsTraceIDs: Bool
        let records = Mutex<[HTTPAccessRecord]>([])

        init(recordsTraceIDs: Bool) { self.recordsTraceIDs = recordsTraceIDs }

        func requestCompleted(_ record: HTTPAccessRecord) { records.withLock { $0.append(record) } }

        func traceIDs(for path: String) async throws -> [TraceID?] {
            for _ in 0..<200 {
                let found = records.withLock { $0.filter { $0.path == path }.map(\.traceID) }
                if !found.isEmpty { return found }
                try await Task.sleep(nanoseconds: 10_000_000)
            }
            return []
        }
    }

    @Test("An answer without the handler gets a trace id only when the observer reads them", arguments: [true, false])
    func immediateAnswers(recordsTraceIDs: Bool) async throws {
        let observer = RecordingObserver(recordsTraceIDs: recordsTraceIDs)
        let server = try TestServer(observer: observer)
        do {
            try await check(server, observer, recordsTraceIDs: recordsTraceIDs)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    private func check(_ server: TestServer, _ observer: RecordingObserver, recordsTraceIDs: Bool) async throws {
        let sent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let immediate = try await RawHTTPClient.send(port: server.port, method: "GET", target: "/immediate",
                                                     headers: [("traceparent", sent)])
        #expect(immediate.status == 200)
        let handled = try await RawHTTPClient.send(port: server.port, method: "GET", target: "/text")
        #expect(handled.status == 200)
        let immediateIDs = try await observer.traceIDs(for: "/immediate")
        #expect(immediateIDs.count == 1)
        if recordsTraceIDs {
            #expect(immediateIDs.first??.description == "4bf92f3577b34da6a3ce929d0e0e4736")
        } else {
            #expect(immediateIDs.first! == nil)
        }
        // The handler always gets a trace (it forwards it), and the record carries it.
        let handledIDs = try await observer.traceIDs(for: "/text")
        #expect(handledIDs.count == 1 && handledIDs.first! != nil)
    }
}
