import Kafka
import Testing

@Suite("DeleteRecords against the mock cluster")
struct DeleteRecordsTests {
    @Test("librdkafka 2.0.2's mock cluster refuses DeleteRecords with a clear unsupported error")
    func mockRefusesDeleteRecords() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.purge", partitions: 1)
        let producer = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
        defer { producer.close() }
        try await produce(producer, "t.purge", partition: 0, 0..<5)

        let admin = try KafkaAdmin(client: client(cluster))
        let outcome: Result<[Int32: Int64], KafkaError> = try await withTimeout(60) {
            do throws(KafkaError) { return .success(try await admin.deleteRecords(topic: "t.purge", beforeOffsets: [0: 3], timeoutMs: 5_000)) }
            catch { return .failure(error) }
        }
        switch outcome {
        case .success(let lowWatermarks):
            Issue.record("the mock deleted records after all (new low watermarks \(lowWatermarks)): test the reader below the low watermark")
        case .failure(let error):
            #expect(error.isUnsupported, "\(error.kind): \(error.message)")
        }
        #expect(try await admin.deleteRecords(topic: "t.purge", beforeOffsets: [:]).isEmpty)
    }
}
