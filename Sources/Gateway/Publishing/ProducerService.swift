import Kafka
import ServiceLifecycle

/// Keeps the producer open for the life of the service group and flushes it on shutdown.
/// Listed before the HTTP server, so it shuts down after it: in-flight requests still publish.
public struct ProducerService: Service {
    let producer: KafkaProducer
    let flushTimeoutMs: Int32

    public init(producer: KafkaProducer, flushTimeoutMs: Int32 = 10_000) {
        self.producer = producer
        self.flushTimeoutMs = flushTimeoutMs
    }

    public func run() async throws {
        try? await gracefulShutdown()
        producer.close(flushTimeoutMs: flushTimeoutMs)
    }
}

/// Lets senders load what they need at start-up (Google's key set), then flips `/readyz` to
/// failing as soon as shutdown starts. Listed last, so it is told first.
public struct ReadinessService: Service {
    let readiness: Readiness

    public init(readiness: Readiness) { self.readiness = readiness }

    public func run() async throws {
        await readiness.warmUp()
        try? await gracefulShutdown()
        readiness.startDraining()
    }
}
