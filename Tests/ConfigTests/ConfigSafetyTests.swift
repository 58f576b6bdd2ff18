import Config
import Testing
import Verifiers

@Suite("Configuration that would break a promise is refused")
struct ConfigSafetyTests {
    func key(_ yaml: String) -> String? {
        do { _ = try SenderCatalog.standard.parseConfig(yaml: yaml); return nil } catch { return error.key }
    }

    @Test("durability settings cannot be overridden through kafka.properties", arguments: [
        "acks", "enable.idempotence", "message.timeout.ms", "delivery.timeout.ms", "enable.auto.commit", "group.id",
    ])
    func managedProperties(name: String) {
        #expect(key("kafka: { properties: { \(name): \"1\" } }") == "kafka.properties.\(name)")
    }

    @Test("two Iaptic apps may not share a secret")
    func sharedSecret() {
        #expect(key("sources: { iaptic: { apps: [{name: a, secrets: [s1, same]}, {name: b, secrets: [same]}] } }") == "sources.iaptic.apps")
    }

    @Test("the topic prefix must be a valid Kafka name", arguments: ["tøllgate", "a b", "a/b", ""])
    func topicPrefix(prefix: String) {
        #expect(key("kafka: { topicPrefix: \"\(prefix)\" }") == "kafka.topicPrefix")
    }

    @Test("the body limit must fit in one Kafka record")
    func bodyLimit() throws {
        #expect(key("http: { maxBodyBytes: 2000000 }") == "http.maxBodyBytes")
        let raised = try SenderCatalog.standard.parseConfig(yaml: "http: { maxBodyBytes: 2000000 }\nkafka: { properties: { message.max.bytes: \"4000000\" } }")
        #expect(raised.http.maxBodyBytes == 2_000_000)
    }

    @Test("a YAML error does not quote the offending line (it may hold a secret)")
    func yamlErrorHidesSource() {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: "sources:\n  iaptic:\n    apps: [{name: a, secrets: [hunter2-secret-value]\n", origin: "t.yaml")
            Issue.record("expected an error")
        } catch {
            #expect(!error.description.contains("hunter2"))
            #expect(error.description.contains("not valid YAML"))
        }
    }
}
