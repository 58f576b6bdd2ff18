import Config
import Testing
import Verifiers

@Suite("Configuration: spool, deduplication, shutdown")
struct DurabilityConfigTests {
    @Test("defaults: spool on, 1 GiB; a 10-minute window of 100,000 ids; 25 s grace, no drain delay")
    func defaults() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "")
        #expect(config.spool.enabled)
        #expect(config.spool.path == "./.tollgate/spool.sqlite")
        #expect(config.spool.maxBytes == 1_073_741_824)
        #expect(config.dedup.windowSeconds == 600)
        #expect(config.dedup.maxEntries == 100_000)
        #expect(config.shutdown.gracePeriodMs == 25_000)
        #expect(config.shutdown.drainDelayMs == 0)
    }

    @Test("the file and the environment set them")
    func fileAndEnvironment() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            spool: { path: /var/lib/tollgate/spool.sqlite, maxBytes: 10485760 }
            dedup: { windowSeconds: 0 }
            shutdown: { gracePeriodMs: 30000, drainDelayMs: 5000 }
            """, environment: ["TOLLGATE_SPOOL_ENABLED": "false", "TOLLGATE_DEDUP_MAX_ENTRIES": "5"])
        #expect(!config.spool.enabled)
        #expect(config.spool.path == "/var/lib/tollgate/spool.sqlite")
        #expect(config.spool.maxBytes == 10_485_760)
        #expect(config.dedup.windowSeconds == 0)
        #expect(config.dedup.maxEntries == 5)
        #expect(config.shutdown.gracePeriodMs == 30_000)
        #expect(config.shutdown.drainDelayMs == 5_000)
    }

    @Test("bad values are refused, naming the key", arguments: [
        ("spool: { maxBytes: 1000 }", "spool.maxBytes"),
        ("spool: { maxBytes: 2000000 }", "spool.maxBytes"),  // below 8 x the default 256 KiB body limit
        ("spool: { path: \"\" }", "spool.path"),
        ("dedup: { windowSeconds: -1 }", "dedup.windowSeconds"),
        ("shutdown: { gracePeriodMs: 500 }", "shutdown.gracePeriodMs"),
        ("shutdown: { gracePeriodMs: 5000, drainDelayMs: 5000 }", "shutdown.drainDelayMs"),
        ("spool: { size: 1 }", "spool.size"),
        // One topic per delay: a repeated one would be a tier feeding itself.
        ("kafka: { retryDelaysMs: [5000, 5000] }", "kafka.retryDelaysMs"),
    ])
    func refused(yaml: String, key: String) {
        #expect {
            _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
        } throws: { error in
            (error as? ConfigError)?.key == key
        }
    }

    @Test("a disabled spool is not bound by the body limit")
    func disabledSpool() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "spool: { enabled: false, maxBytes: 2097152 }")
        #expect(!config.spool.enabled)
    }
}
